import { wilsonInterval } from '../eval/pass-at-1.ts';
import { Rng } from '../util/random.ts';

/**
 * Intervals over training seeds and tasks together (docs/decisions/0016-results-statistics-provenance.md).
 *
 * A pooled cell holds several evaluations: one per (family, seed), each scoring the same task set of
 * its family (the evaluation seeds are shared by every seed and system). Two sources of variation
 * matter: which seeds were trained (a seed's SFT and RL can go well or badly) and which tasks were
 * drawn. The two-level bootstrap resamples both, within each family: seeds with replacement, then
 * task indices with replacement, one task draw shared by every drawn seed (the tasks are crossed
 * with the seeds, not nested in them). Where a family's evaluations do not share one task list,
 * each drawn seed draws its own tasks.
 *
 * - Pass@1 cells: the point estimate is the mean over every (seed, task) of the task's mean
 *   success; the interval is Wilson's with the effective sample size p (1 - p) / var_boot, clipped
 *   to [1, all samples]. The bootstrap variance carries both levels, and Wilson stays inside [0, 1]
 *   and keeps a width at 0% and 100%, where a percentile bootstrap collapses to a point.
 * - Paired differences (system A minus system B on the same family, seed and tasks): the same
 *   resampling applied to the per-(seed, task) differences, a percentile interval, and the
 *   difference of each seed on its own.
 *
 * The replicate count and the generator's seed are fixed, so a report is the same every time.
 */
export interface Unit {
  /** Resampling stratum: the task family. */
  stratum: string;
  /** Training seed; units of two systems pair by (stratum, seed). */
  seed: number;
  taskSeeds: readonly number[];
  /** Per-task mean success (or, for differences, per-task mean difference), in taskSeeds order. */
  perTask: readonly number[];
  samplesPerTask: number;
}

export interface BootstrapOptions {
  replicates?: number;
  /** Seed of the resampling generator (callers derive it from what the cell is). */
  seed?: number;
}

export const DEFAULT_REPLICATES = 2000;

export interface PooledEstimate {
  passAt1: number;
  low: number;
  high: number;
  /** Evaluations pooled (family x seed). */
  units: number;
  /** Distinct training seeds. */
  seeds: number;
  /** Tasks of one evaluation (the largest, if they differ). */
  tasks: number;
  samples: number;
  effectiveSamples: number;
}

export interface PairedEstimate {
  diff: number;
  low: number;
  high: number;
  /** Pairs (family x seed) compared. */
  units: number;
  seeds: number;
  /** Each seed's difference, averaged over its families' tasks. */
  perSeed: { seed: number; diff: number }[];
}

/** FNV-1a over a string: a stable seed for a cell's resampling generator. */
export function stableSeed(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function strata(units: readonly Unit[]): Unit[][] {
  const by = new Map<string, Unit[]>();
  for (const u of units) by.set(u.stratum, [...(by.get(u.stratum) ?? []), u]);
  return [...by.keys()].sort().map((k) => by.get(k)!);
}

const sameTasks = (us: readonly Unit[]) =>
  us.every(
    (u) => u.taskSeeds.length === us[0]!.taskSeeds.length && u.taskSeeds.every((t, i) => t === us[0]!.taskSeeds[i]),
  );

/** Replicate means of the two-level bootstrap: sum over drawn (seed, task) cells / their count. */
function bootstrapMeans(units: readonly Unit[], o: BootstrapOptions): number[] {
  const rng = new Rng(o.seed ?? 0);
  const groups = strata(units).map((us) => ({ us, crossed: sameTasks(us) }));
  const out: number[] = [];
  for (let b = 0; b < (o.replicates ?? DEFAULT_REPLICATES); b++) {
    let sum = 0;
    let count = 0;
    for (const { us, crossed } of groups) {
      const shared = crossed ? us[0]!.perTask.map(() => rng.int(us[0]!.perTask.length)) : null;
      for (let s = 0; s < us.length; s++) {
        const u = us[rng.int(us.length)]!;
        const idx = shared ?? u.perTask.map(() => rng.int(u.perTask.length));
        for (const t of idx) sum += u.perTask[t]!;
        count += idx.length;
      }
    }
    out.push(sum / count);
  }
  return out;
}

function variance(xs: readonly number[]): number {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / Math.max(1, xs.length - 1);
}

function check(units: readonly Unit[]): void {
  if (units.length === 0) throw new Error('the bootstrap needs at least one evaluation');
  for (const u of units)
    if (u.perTask.length === 0 || u.perTask.length !== u.taskSeeds.length)
      throw new Error(
        `evaluation ${u.stratum} seed ${u.seed}: ${u.perTask.length} task scores for ${u.taskSeeds.length} tasks`,
      );
}

/** Pass@1 pooled over families, seeds and tasks, with the two-level bootstrap interval. */
export function pooledPassAt1(units: readonly Unit[], o: BootstrapOptions = {}): PooledEstimate {
  check(units);
  const all = units.flatMap((u) => u.perTask);
  const p = mean(all);
  const samples = units.reduce((a, u) => a + u.perTask.length * u.samplesPerTask, 0);
  let nEff = samples;
  if (p > 0 && p < 1) {
    const v = variance(bootstrapMeans(units, o));
    nEff = v > 0 ? Math.min(samples, Math.max(1, (p * (1 - p)) / v)) : samples;
  }
  const { low, high } = wilsonInterval({ p, n: nEff });
  return {
    passAt1: p,
    low: Math.min(low, p),
    high: Math.max(high, p),
    units: units.length,
    seeds: new Set(units.map((u) => u.seed)).size,
    tasks: Math.max(...units.map((u) => u.perTask.length)),
    samples,
    effectiveSamples: nEff,
  };
}

/**
 * A minus B, paired by (family, seed) and by task. Pairs whose task lists differ are refused: a
 * paired difference is only meaningful on the same tasks.
 */
export function pairedDifference(pairs: readonly { a: Unit; b: Unit }[], o: BootstrapOptions = {}): PairedEstimate {
  const units: Unit[] = pairs.map(({ a, b }) => {
    if (a.taskSeeds.length !== b.taskSeeds.length || a.taskSeeds.some((t, i) => t !== b.taskSeeds[i]))
      throw new Error(`cannot pair ${a.stratum} seed ${a.seed}: the two evaluations scored different tasks`);
    return { ...a, perTask: a.perTask.map((x, i) => x - b.perTask[i]!) };
  });
  check(units);
  const reps = bootstrapMeans(units, o).sort((x, y) => x - y);
  const q = (f: number) => reps[Math.min(reps.length - 1, Math.max(0, Math.round(f * (reps.length - 1))))]!;
  const seeds = [...new Set(units.map((u) => u.seed))].sort((x, y) => x - y);
  return {
    diff: mean(units.flatMap((u) => u.perTask)),
    low: q(0.025),
    high: q(0.975),
    units: units.length,
    seeds: seeds.length,
    perSeed: seeds.map((seed) => ({
      seed,
      diff: mean(units.filter((u) => u.seed === seed).flatMap((u) => u.perTask)),
    })),
  };
}
