import type { EvalResult } from '../eval/eval-result.ts';
import { passAt1 } from '../eval/pass-at-1.ts';

/**
 * The paper's tables as plain data (method §8), built from eval results. A cell with no data is
 * null and renders as "not run"; tables always keep their standard rows so a partial run still
 * shows what is missing.
 */
export interface Cell {
  passAt1: number;
  low: number;
  high: number;
  /** Eval files pooled into this cell (e.g. 3 training seeds). */
  runs: number;
}

export interface Table {
  id: string;
  title: string;
  caption: string;
  columns: string[];
  rows: { label: string; cells: (Cell | null)[] }[];
}

/** Display names for the systems of method §7, in the paper's row order. */
export const SYSTEM_LABELS: Readonly<Record<string, string>> = {
  base: 'base (SFT)',
  'ppo-single-window': 'RL w/o compaction',
  'compaction-rl': 'CompactionRL',
  'no-summary-training': '− summary training',
  'segment-mean-loss': '− token-level loss',
  'no-cross-trajectory-gae': '− cross-trajectory GAE',
  broadcast: 'broadcast (critic-free)',
};

interface CellQuery {
  system?: string;
  /** Absent: pool every env (the reproduce JSON's headline numbers). */
  env?: string;
  variant: string;
  writer: string;
  mode: string;
}

/**
 * Pools every matching eval into one cell. Binary per-task means are turned back into outcome
 * lists so that several runs' tasks become clusters of one Pass@1 estimate (src/eval/pass-at-1.ts).
 */
export function cellFor(evals: readonly EvalResult[], q: CellQuery): Cell | null {
  const hits = evals.filter(
    (e) =>
      (q.system === undefined || e.system === q.system) &&
      (q.env === undefined || e.env === q.env) &&
      e.variant === q.variant &&
      e.summaryWriter === q.writer &&
      e.modes[q.mode],
  );
  if (hits.length === 0) return null;
  const outcomes: number[][] = [];
  for (const e of hits) {
    const n = e.samplesPerTask;
    for (const m of e.modes[q.mode]!.perTask) {
      const k = Math.round(m * n);
      outcomes.push(Array.from({ length: n }, (_, i) => (i < k ? 1 : 0)));
    }
  }
  if (outcomes.length === 0) return null;
  const s = passAt1(outcomes);
  return { passAt1: s.passAt1, low: s.low, high: s.high, runs: hits.length };
}

function envsOf(evals: readonly EvalResult[]): string[] {
  const envs = [...new Set(evals.map((e) => e.env))].sort();
  return envs.length ? envs : ['(no env evaluated)'];
}

function systemTable(options: {
  evals: readonly EvalResult[];
  id: string;
  title: string;
  caption: string;
  systems: readonly string[];
  modes: readonly string[];
}): Table {
  const envs = envsOf(options.evals);
  const columns = envs.flatMap((env) => options.modes.map((m) => `${env} ${m}`));
  const rows = options.systems.map((system) => ({
    label: SYSTEM_LABELS[system] ?? system,
    cells: envs.flatMap((env) =>
      options.modes.map((mode) => cellFor(options.evals, { system, env, variant: 'default', writer: 'self', mode })),
    ),
  }));
  return { id: options.id, title: options.title, caption: options.caption, columns, rows };
}

/** Every table of the report, in reading order. `trainingWindows` is the K training used (the "x4" of the paper). */
export function buildTables(evals: readonly EvalResult[], trainingWindows = 4): Table[] {
  const xk = `x${trainingWindows}`;
  const tables: Table[] = [
    systemTable({
      evals,
      id: 'table2',
      title: 'Table 2 analogue: Pass@1 at the same C',
      caption: `single x1 vs compacted ${xk}; 95% intervals`,
      systems: ['base', 'ppo-single-window', 'compaction-rl'],
      modes: ['x1', xk],
    }),
    systemTable({
      evals,
      id: 'table3',
      title: 'Table 3 analogue: summary training',
      caption: 'with vs without summary tokens in the policy loss',
      systems: ['compaction-rl', 'no-summary-training'],
      modes: ['x1', xk],
    }),
    systemTable({
      evals,
      id: 'table4',
      title: 'Table 4 analogue: optimization ablations (+ broadcast)',
      caption: 'token-level loss, cross-trajectory GAE, critic-free broadcast',
      systems: ['compaction-rl', 'segment-mean-loss', 'no-cross-trajectory-gae', 'broadcast'],
      modes: ['x1', xk],
    }),
  ];

  // Table 1: one acting policy, summaries by different writers (only the writer changes).
  const envs = envsOf(evals);
  const writerOrder = (w: string) => ['self', 'oracle', 'null'].indexOf(w) + 1 || 4;
  const pairs = [
    ...new Set(evals.filter((e) => e.variant === 'default').map((e) => `${e.system}\u0000${e.summaryWriter}`)),
  ]
    .map((p) => p.split('\u0000') as [string, string])
    .filter(([sys]) => evals.some((e) => e.system === sys && e.summaryWriter !== 'self'))
    .sort((a, b) => a[0].localeCompare(b[0]) || writerOrder(a[1]) - writerOrder(b[1]) || a[1].localeCompare(b[1]));
  tables.push({
    id: 'table1',
    title: 'Table 1 analogue: summary writers',
    caption: `acting policy fixed, summary writer swapped; ${xk}`,
    columns: envs.map((e) => `${e} ${xk}`),
    rows: pairs.length
      ? pairs.map(([system, writer]) => ({
          label: `${SYSTEM_LABELS[system] ?? system} + ${writer} summaries`,
          cells: envs.map((env) => cellFor(evals, { system, env, variant: 'default', writer, mode: xk })),
        }))
      : [{ label: 'base + oracle / null / lossy summaries', cells: envs.map(() => null) }],
  });

  // Held-out variants (knob combinations never trained on).
  const variants = [
    ...new Set(evals.filter((e) => e.variant !== 'default').map((e) => `${e.env}:${e.variant}`)),
  ].sort();
  const heldSystems = [...new Set(evals.filter((e) => e.variant !== 'default').map((e) => e.system))];
  tables.push({
    id: 'heldout',
    title: 'Held-out variants',
    caption: `Pass@1 ${xk} on knob combinations never used in training`,
    columns: variants.length ? variants : ['(held-out variant)'],
    rows: (heldSystems.length ? heldSystems : ['base', 'compaction-rl']).map((system) => ({
      label: SYSTEM_LABELS[system] ?? system,
      cells: (variants.length ? variants : ['?:?']).map((v) => {
        const [env, variant] = v.split(':') as [string, string];
        return cellFor(evals, { system, env, variant, writer: 'self', mode: xk });
      }),
    })),
  });

  // Longer horizon: more windows than training used.
  const longModes = [...new Set(evals.flatMap((e) => Object.keys(e.modes)))]
    .filter((m) => Number(m.slice(1)) > trainingWindows)
    .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  const longSystems = [...new Set(evals.filter((e) => longModes.some((m) => e.modes[m])).map((e) => e.system))];
  const longCols = envs.flatMap((env) =>
    (longModes.length ? longModes : [`x${2 * trainingWindows}`]).map((m) => [env, m] as const),
  );
  tables.push({
    id: 'longer',
    title: 'Longer horizon',
    caption: `more windows than training used (K > ${trainingWindows}), same C`,
    columns: longCols.map(([env, m]) => `${env} ${m}`),
    rows: (longSystems.length ? longSystems : ['base', 'compaction-rl']).map((system) => ({
      label: SYSTEM_LABELS[system] ?? system,
      cells: longCols.map(([env, mode]) => cellFor(evals, { system, env, variant: 'default', writer: 'self', mode })),
    })),
  });
  return tables;
}

/** "62.5 [55.0, 70.0]" in percent, or "not run". */
export function formatCell(c: Cell | null): string {
  if (!c) return 'not run';
  const pct = (x: number) => (100 * x).toFixed(1);
  return `${pct(c.passAt1)} [${pct(c.low)}, ${pct(c.high)}]${c.runs > 1 ? ` (${c.runs} runs)` : ''}`;
}
