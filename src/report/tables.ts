import { askedContextWindow, type EvalResult } from '../eval/eval-result.ts';
import { ASYNC_SYSTEMS, CREDIT_SYSTEMS } from '../eval/system-names.ts';
import { cellFor, diffCell, type CellQuery, type TableCell } from './cells.ts';
import { tableNotes, type ProvenanceContext } from './provenance-notes.ts';

export { cellFor, formatCell, isEstimate, type Cell, type DiffCell, type TableCell } from './cells.ts';

/**
 * The paper's tables as plain data (method §8), built from eval results. A cell with no data is
 * null and renders as "not run"; tables always keep their standard rows so a partial run still
 * shows what is missing. Every table says how many seeds its cells pool and whether its inputs
 * come from more than one commit or config (`notes`).
 */
export interface Table {
  id: string;
  title: string;
  caption: string;
  columns: string[];
  rows: { label: string; cells: TableCell[] }[];
  notes: string[];
}

/** Display names for the systems of method §7, in the paper's row order. */
export const SYSTEM_LABELS: Readonly<Record<string, string>> = {
  base: 'base (SFT)',
  'ppo-single-window': 'RL w/o compaction',
  'ppo-single-window-2x': 'RL w/o compaction, 2x context',
  'compaction-rl': 'CompactionRL',
  'no-summary-training': '− summary training',
  'segment-mean-loss': '− token-level loss',
  'no-cross-trajectory-gae': '− cross-trajectory GAE',
  broadcast: 'broadcast (critic-free)',
  'full-trajectory-gae': 'full-trajectory GAE',
  'inverse-count-weights': 'segment weights 1/N',
  'split-reward': 'reward R/K per segment',
  'discounted-reward': 'reward γ^(K−k) R per segment',
  'no-whitening': 'no whitening',
  'per-kind-whitening': 'whitening per segment kind',
  'per-position-whitening': 'whitening per segment position',
  'staleness-1': 'staleness ≤ 1, no correction',
  'staleness-2': 'staleness ≤ 2, no correction',
  'staleness-1-decoupled': 'staleness ≤ 1, decoupled PPO',
  'staleness-2-decoupled': 'staleness ≤ 2, decoupled PPO',
};

const label = (s: string) => SYSTEM_LABELS[s] ?? s;
const DOUBLE = 'ppo-single-window-2x';

export interface TableOptions {
  /** K of training: the "x4" column. */
  trainingWindows: number;
  /** C of the standard evaluations (default: the smallest C among the evals). */
  contextWindow?: number;
  provenance?: ProvenanceContext;
}

interface Ctx {
  evals: readonly EvalResult[];
  envs: string[];
  xk: string;
  C: number;
}

/** Columns: each env, then all envs pooled when there are several. */
function envColumns(ctx: Ctx): (string | undefined)[] {
  return ctx.envs.length > 1 ? [...ctx.envs, undefined] : ctx.envs;
}

const q = (ctx: Ctx, system: string, mode: string, env: string | undefined, writer = 'self'): CellQuery => ({
  system,
  env,
  variant: 'default',
  writer,
  mode,
  // The 2x-context system's single window is at 2C (method §7); every other cell at C.
  contextWindow: system === DOUBLE && mode === 'x1' ? 2 * ctx.C : ctx.C,
});

function systemTable(
  ctx: Ctx,
  o: { id: string; title: string; caption: string; systems: string[]; diffs?: [string, string, string][] },
): Omit<Table, 'notes'> {
  // A mode nobody evaluated (e.g. x1 of a long-horizon preset) gets no column.
  const modes = ['x1', ctx.xk].filter((m) => ctx.evals.some((e) => e.modes[m] !== undefined));
  const cols = envColumns(ctx).flatMap((env) => (modes.length ? modes : ['x1', ctx.xk]).map((m) => [env, m] as const));
  const rows: Table['rows'] = o.systems.map((system) => ({
    label: label(system),
    cells: cols.map(([env, mode]) => cellFor(ctx.evals, q(ctx, system, mode, env))),
  }));
  for (const [a, b, only] of o.diffs ?? [])
    rows.push({
      label: `Δ ${label(a)} vs ${label(b)}`,
      cells: cols.map(([env, mode]) =>
        only === mode || only === '*' ? diffCell(ctx.evals, q(ctx, a, mode, env), q(ctx, b, mode, env)) : 'n/a',
      ),
    });
  return {
    id: o.id,
    title: o.title,
    caption: o.caption,
    columns: cols.map(([env, m]) => `${env ?? 'all'} ${m}`),
    rows,
  };
}

/** Every table of the report, in reading order. */
export function buildTables(evals: readonly EvalResult[], options: TableOptions | number = 4): Table[] {
  const o: TableOptions = typeof options === 'number' ? { trainingWindows: options } : options;
  const envs = [...new Set(evals.map((e) => e.env))].sort();
  const C = o.contextWindow ?? (evals.length ? Math.min(...evals.map(askedContextWindow)) : 256);
  const ctx: Ctx = { evals, envs: envs.length ? envs : ['(no env evaluated)'], xk: `x${o.trainingWindows}`, C };
  const { xk } = ctx;
  const has2x = evals.some((e) => e.system === DOUBLE);
  // A system evaluated under its own name (crl eval --system NAME) gets its own row after the standard ones.
  const custom = [...new Set(evals.map((e) => e.system))].filter((s) => !(s in SYSTEM_LABELS)).sort();
  const tables: Omit<Table, 'notes'>[] = [
    systemTable(ctx, {
      id: 'table2',
      title: 'Table 2 analogue: Pass@1',
      caption: `single window x1 and compacted ${xk}, both at C = ${C}${has2x ? `; the 2x-context system's x1 is its own single window at 2C = ${2 * C}, its ${xk} its policy with compaction at C` : ''}. Δ A vs B: A minus B in points, paired on the same family, seed and tasks, 95% bootstrap interval, then each seed`,
      systems: ['base', 'ppo-single-window', ...(has2x ? [DOUBLE] : []), 'compaction-rl', ...custom],
      diffs: [
        ['compaction-rl', 'base', xk],
        ['compaction-rl', 'ppo-single-window', xk],
        ['ppo-single-window', 'base', 'x1'],
      ],
    }),
  ];
  if (has2x) tables.push(fixedBudgetTable(ctx));
  tables.push(
    systemTable(ctx, {
      id: 'table3',
      title: 'Table 3 analogue: summary training',
      caption: 'with vs without summary tokens in the policy loss; Δ: paired difference',
      systems: ['compaction-rl', 'no-summary-training'],
      diffs: [['no-summary-training', 'compaction-rl', xk]],
    }),
    systemTable(ctx, {
      id: 'table4',
      title: 'Table 4 analogue: optimization ablations (+ broadcast)',
      caption: `token-level loss, cross-trajectory GAE, critic-free broadcast; Δ: each minus CompactionRL at ${xk}, paired by family, seed and task`,
      systems: ['compaction-rl', 'segment-mean-loss', 'no-cross-trajectory-gae', 'broadcast'],
      diffs: ['segment-mean-loss', 'no-cross-trajectory-gae', 'broadcast'].map((s) => [s, 'compaction-rl', xk]),
    }),
    ...creditTable(ctx),
    ...asyncTable(ctx),
    writersTable(ctx),
    heldOutTable(ctx),
    longerTable(ctx, o.trainingWindows),
  );
  return tables.map((t) => ({ ...t, notes: tableNotes(t, o.provenance) }));
}

/**
 * CompactionRL against the `compared` systems that were evaluated (none: no table), with the
 * `baselines` that were evaluated between them; every Δ is a system minus CompactionRL at xK.
 */
function againstCompactionRl(
  ctx: Ctx,
  o: { id: string; title: string; caption: string; compared: readonly string[]; baselines?: readonly string[] },
): Omit<Table, 'notes'>[] {
  const evaluated = (s: string) => ctx.evals.some((e) => e.system === s);
  const present = o.compared.filter(evaluated);
  if (present.length === 0) return [];
  const shown = [...(o.baselines ?? []).filter(evaluated), ...present];
  return [
    systemTable(ctx, {
      id: o.id,
      title: o.title,
      caption: o.caption,
      systems: ['compaction-rl', ...shown],
      diffs: shown.map((s) => [s, 'compaction-rl', ctx.xk]),
    }),
  ];
}

/** docs/credit.md: each credit choice against CompactionRL, when any was evaluated. */
const creditTable = (ctx: Ctx) =>
  againstCompactionRl(ctx, {
    id: 'credit',
    title: 'Credit across compaction boundaries (docs/credit.md)',
    caption: `CompactionRL with one credit choice changed; Δ: each minus CompactionRL at ${ctx.xk}, paired by family, seed and task`,
    compared: CREDIT_SYSTEMS,
    baselines: ['no-cross-trajectory-gae', 'broadcast'],
  });

/** docs/async.md: CompactionRL sampled up to S versions behind, against the synchronous loop (S = 0). */
const asyncTable = (ctx: Ctx) =>
  againstCompactionRl(ctx, {
    id: 'async',
    title: 'Asynchronous rollouts (docs/async.md)',
    caption: `CompactionRL (S = 0, synchronous) and the same sampled up to S policy versions behind; Δ: each minus S = 0 at ${ctx.xk}, paired by family, seed and task`,
    compared: ASYNC_SYSTEMS,
  });

/** The paper's fixed-peak-budget comparison: CompactionRL with K windows of C against one window of 2C. */
function fixedBudgetTable(ctx: Ctx): Omit<Table, 'notes'> {
  const cols = envColumns(ctx);
  const C2 = 2 * ctx.C;
  const at = (system: string, mode: string, contextWindow: number) => (env: string | undefined) =>
    cellFor(ctx.evals, { system, env, variant: 'default', writer: 'self', mode, contextWindow });
  const rows: [string, (env: string | undefined) => TableCell][] = [
    [`CompactionRL, ${ctx.xk} at C = ${ctx.C}`, at('compaction-rl', ctx.xk, ctx.C)],
    [`RL w/o compaction, 2x context: x1 at 2C = ${C2}`, at(DOUBLE, 'x1', C2)],
    [`base (SFT), x1 at 2C = ${C2}`, at('base', 'x1', C2)],
    [`RL w/o compaction, x1 at C = ${ctx.C}`, at('ppo-single-window', 'x1', ctx.C)],
    [
      `Δ CompactionRL ${ctx.xk} vs 2x context x1`,
      (env) =>
        diffCell(
          ctx.evals,
          { system: 'compaction-rl', env, variant: 'default', writer: 'self', mode: ctx.xk, contextWindow: ctx.C },
          { system: DOUBLE, env, variant: 'default', writer: 'self', mode: 'x1', contextWindow: C2 },
        ),
    ],
  ];
  return {
    id: 'fixed-budget',
    title: 'Fixed peak budget: compaction at C vs one window of 2C',
    caption: `the paper's comparison (method §7): CompactionRL never holds more than C = ${ctx.C} tokens, the 2x-context system up to ${C2}`,
    columns: cols.map((env) => env ?? 'all'),
    rows: rows.map(([l, f]) => ({ label: l, cells: cols.map(f) })),
  };
}

function writersTable(ctx: Ctx): Omit<Table, 'notes'> {
  const { evals, envs, xk } = ctx;
  const writerOrder = (w: string) => ['self', 'oracle', 'null'].indexOf(w) + 1 || 4;
  const pairs = [
    ...new Set(
      evals
        .filter((e) => e.variant === 'default' && askedContextWindow(e) === ctx.C)
        .map((e) => `${e.system}\u0000${e.summaryWriter}`),
    ),
  ]
    .map((p) => p.split('\u0000') as [string, string])
    .filter(([sys]) => evals.some((e) => e.system === sys && e.summaryWriter !== 'self'))
    .sort((a, b) => a[0].localeCompare(b[0]) || writerOrder(a[1]) - writerOrder(b[1]) || a[1].localeCompare(b[1]));
  return {
    id: 'table1',
    title: 'Table 1 analogue: summary writers',
    caption: `acting policy fixed, summary writer swapped; ${xk}`,
    columns: envs.map((e) => `${e} ${xk}`),
    rows: pairs.length
      ? pairs.map(([system, writer]) => ({
          label: `${label(system)} + ${writer} summaries`,
          cells: envs.map((env) => cellFor(evals, { ...q(ctx, system, xk, env, writer), contextWindow: ctx.C })),
        }))
      : [{ label: 'base + oracle / null / lossy summaries', cells: envs.map(() => null) }],
  };
}

/** Held-out variants (knob combinations never trained on). */
function heldOutTable(ctx: Ctx): Omit<Table, 'notes'> {
  const { evals, xk } = ctx;
  const variants = [
    ...new Set(evals.filter((e) => e.variant !== 'default').map((e) => `${e.env}:${e.variant}`)),
  ].sort();
  const systems = [...new Set(evals.filter((e) => e.variant !== 'default').map((e) => e.system))];
  return {
    id: 'heldout',
    title: 'Held-out variants',
    caption: `Pass@1 ${xk} on knob combinations never used in training`,
    columns: variants.length ? variants : ['(held-out variant)'],
    rows: (systems.length ? systems : ['base', 'compaction-rl']).map((system) => ({
      label: label(system),
      cells: (variants.length ? variants : ['?:?']).map((v) => {
        const [env, variant] = v.split(':') as [string, string];
        return cellFor(evals, { system, env, variant, writer: 'self', mode: xk, contextWindow: ctx.C });
      }),
    })),
  };
}

/** Longer horizon: more windows than training used, same C. */
function longerTable(ctx: Ctx, K: number): Omit<Table, 'notes'> {
  const { evals, envs } = ctx;
  const longModes = [...new Set(evals.flatMap((e) => Object.keys(e.modes)))]
    .filter((m) => Number(m.slice(1)) > K)
    .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  const systems = [...new Set(evals.filter((e) => longModes.some((m) => e.modes[m])).map((e) => e.system))];
  const cols = envs.flatMap((env) => (longModes.length ? longModes : [`x${2 * K}`]).map((m) => [env, m] as const));
  return {
    id: 'longer',
    title: 'Longer horizon',
    caption: `more windows than training used (K > ${K}), same C`,
    columns: cols.map(([env, m]) => `${env} ${m}`),
    rows: (systems.length ? systems : ['base', 'compaction-rl']).map((system) => ({
      label: label(system),
      cells: cols.map(([env, mode]) =>
        cellFor(evals, { system, env, variant: 'default', writer: 'self', mode, contextWindow: ctx.C }),
      ),
    })),
  };
}
