import { askedContextWindow, type EvalResult } from '../eval/eval-result.ts';
import { pairedDifference, pooledPassAt1, stableSeed, type PairedEstimate, type Unit } from './statistics.ts';

/**
 * Table cells from evaluation files (method §8): which files a cell pools, and its estimate with
 * the two-level bootstrap of statistics.ts. A cell with no data is null ("not run").
 */
export interface Cell {
  kind: 'pass';
  passAt1: number;
  low: number;
  high: number;
  /** Evaluation files pooled (family x seed). */
  runs: number;
  /** Distinct training seeds among them. */
  seeds: number;
  tasks: number;
  samplesPerTask: number;
  /** The files themselves (for the table's seed counts and provenance notes). */
  evals: readonly EvalResult[];
}

/** A paired difference A - B in points of Pass@1, with each seed's own difference. */
export interface DiffCell extends PairedEstimate {
  kind: 'diff';
  evals: readonly EvalResult[];
}

export interface CellQuery {
  system: string;
  /** Absent: pool every env (the reproduce JSON's headline numbers). */
  env?: string;
  variant: string;
  writer: string;
  mode: string;
  /** Absent: any C. */
  contextWindow?: number;
}

export function matchEvals(evals: readonly EvalResult[], q: CellQuery): EvalResult[] {
  return evals.filter(
    (e) =>
      e.system === q.system &&
      (q.env === undefined || e.env === q.env) &&
      (q.contextWindow === undefined || askedContextWindow(e) === q.contextWindow) &&
      e.variant === q.variant &&
      e.summaryWriter === q.writer &&
      e.modes[q.mode] !== undefined,
  );
}

/**
 * One bootstrap unit per file. Files without a recorded seed (older ones) are their own units, with
 * a negative seed so they never pair with another system's file.
 */
function unitOf(e: EvalResult, mode: string, index: number): Unit {
  return {
    stratum: e.env,
    seed: e.seed ?? -1 - index,
    taskSeeds: e.taskSeeds,
    perTask: e.modes[mode]!.perTask,
    samplesPerTask: e.samplesPerTask,
  };
}

const queryKey = (q: CellQuery) =>
  [q.system, q.env ?? '*', q.variant, q.writer, q.mode, q.contextWindow ?? '*'].join('|');

export function cellFor(evals: readonly EvalResult[], q: CellQuery): Cell | null {
  const hits = matchEvals(evals, q);
  if (hits.length === 0) return null;
  const s = pooledPassAt1(
    hits.map((e, i) => unitOf(e, q.mode, i)),
    { seed: stableSeed(queryKey(q)) },
  );
  return {
    kind: 'pass',
    passAt1: s.passAt1,
    low: s.low,
    high: s.high,
    runs: hits.length,
    seeds: s.seeds,
    tasks: s.tasks,
    samplesPerTask: Math.max(...hits.map((e) => e.samplesPerTask)),
    evals: hits,
  };
}

/**
 * A - B on the same (env, seed) and tasks. Only files present for both systems are paired; files
 * without a seed never pair. Null when no pair exists.
 */
export function diffCell(evals: readonly EvalResult[], a: CellQuery, b: CellQuery): DiffCell | null {
  const as = matchEvals(evals, a).filter((e) => e.seed !== undefined);
  const bs = matchEvals(evals, b).filter((e) => e.seed !== undefined);
  const pairs: { a: Unit; b: Unit; ea: EvalResult; eb: EvalResult }[] = [];
  for (const ea of as) {
    const eb = bs.find(
      (x) =>
        x.env === ea.env &&
        x.seed === ea.seed &&
        x.taskSeeds.length === ea.taskSeeds.length &&
        x.taskSeeds.every((t, i) => t === ea.taskSeeds[i]),
    );
    if (eb) pairs.push({ a: unitOf(ea, a.mode, 0), b: unitOf(eb, b.mode, 0), ea, eb });
  }
  if (pairs.length === 0) return null;
  const est = pairedDifference(pairs, { seed: stableSeed(`${queryKey(a)}-${queryKey(b)}`) });
  return { kind: 'diff', ...est, evals: pairs.flatMap((p) => [p.ea, p.eb]) };
}

/** The reproduce JSON's numbers: default variant, own summaries, pooled over every env and seed. */
export function headlineCell(o: {
  evals: readonly EvalResult[];
  system: string;
  mode: string;
  contextWindow: number;
}): Cell | null {
  return cellFor(o.evals, {
    system: o.system,
    variant: 'default',
    writer: 'self',
    mode: o.mode,
    contextWindow: o.contextWindow,
  });
}

/** A table cell: an estimate, "not run" (null) or not applicable to its column ('n/a', e.g. a Δ row's x1). */
export type TableCell = Cell | DiffCell | null | 'n/a';

export const isEstimate = (c: TableCell): c is Cell | DiffCell => c !== null && c !== 'n/a';

/** "62.5 [55.0, 70.0]" in percent; a difference as "+3.1 [−1.2, +7.9] (s0 +4.7, s1 −1.6)"; "not run"; "—". */
export function formatCell(c: TableCell, options: { seedCounts?: boolean } = {}): string {
  if (c === 'n/a') return '—';
  if (!c) return 'not run';
  const pct = (x: number) => (100 * x).toFixed(1);
  if (c.kind === 'pass')
    return `${pct(c.passAt1)} [${pct(c.low)}, ${pct(c.high)}]${options.seedCounts ? ` (${c.seeds} seeds)` : ''}`;
  const signed = (x: number) => `${x > 0 ? '+' : x < 0 ? '−' : '±'}${pct(Math.abs(x))}`;
  const per = c.perSeed.length > 1 ? ` (${c.perSeed.map((s) => `s${s.seed} ${signed(s.diff)}`).join(', ')})` : '';
  return `${signed(c.diff)} [${signed(c.low)}, ${signed(c.high)}]${per}`;
}
