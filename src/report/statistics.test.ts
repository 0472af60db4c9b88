import { describe, expect, it } from 'vitest';
import { pairedDifference, pooledPassAt1, stableSeed, type Unit } from './statistics.ts';

const TASKS = Array.from({ length: 16 }, (_, i) => 1_000_000 + i);
const unit = (seed: number, perTask: number[], stratum = 'kv-ledger'): Unit => ({
  stratum,
  seed,
  taskSeeds: TASKS.slice(0, perTask.length),
  perTask,
  samplesPerTask: 4,
});
/** Task t of seed s passes with a pattern fixed by (s, t): a deterministic stand-in for data. */
const pattern = (s: number, base: number) => TASKS.map((_, t) => ((t * 7 + s * 3) % 16 < base ? 1 : 0.25));

describe('two-level bootstrap (src/report/statistics.ts)', () => {
  it('estimates the mean over every (seed, task) and is the same every time', () => {
    const units = [unit(0, pattern(0, 8)), unit(1, pattern(1, 10)), unit(2, pattern(2, 6))];
    const all = units.flatMap((u) => u.perTask);
    const a = pooledPassAt1(units, { seed: 5 });
    expect(a.passAt1).toBeCloseTo(all.reduce((x, y) => x + y, 0) / all.length, 12);
    expect(pooledPassAt1(units, { seed: 5 })).toEqual(a);
    expect(a.low).toBeLessThan(a.passAt1);
    expect(a.high).toBeGreaterThan(a.passAt1);
    expect([a.units, a.seeds, a.tasks, a.samples]).toEqual([3, 3, 16, 192]);
  });

  it('carries seed-to-seed variation: the bootstrap variance of seed effects alone matches var / S', () => {
    // Every task of seed s scores a_s: the only variation is between seeds.
    const effects = [0.2, 0.5, 0.8, 0.35, 0.65];
    const units = effects.map((a, s) =>
      unit(
        s,
        TASKS.map(() => a),
      ),
    );
    const est = pooledPassAt1(units, { seed: 1, replicates: 4000 });
    const p = 0.5;
    const popVar = effects.reduce((x, a) => x + (a - p) ** 2, 0) / effects.length; // bootstrap: plug-in variance
    const expected = (p * (1 - p)) / (popVar / effects.length);
    expect(est.effectiveSamples / expected).toBeGreaterThan(0.85);
    expect(est.effectiveSamples / expected).toBeLessThan(1.15);
    // The same five values as 15 tasks of one seed: task-level noise only, a narrower interval.
    const flat = pooledPassAt1([unit(0, [...effects, ...effects, ...effects])]);
    expect(flat.passAt1).toBeCloseTo(0.5, 12);
    expect(est.high - est.low).toBeGreaterThan(flat.high - flat.low);
  });

  it('keeps a width at 0% and 100% (Wilson over all samples), where a percentile interval collapses', () => {
    const zero = pooledPassAt1([
      unit(
        0,
        TASKS.map(() => 0),
      ),
      unit(
        1,
        TASKS.map(() => 0),
      ),
    ]);
    expect(zero.passAt1).toBe(0);
    expect(zero.low).toBe(0);
    expect(zero.high).toBeCloseTo(0.0289, 3); // Wilson upper bound for 0 / 128
    const one = pooledPassAt1([
      unit(
        0,
        TASKS.map(() => 1),
      ),
    ]);
    expect(one.low).toBeCloseTo(1 - 0.0571, 3); // 64 samples
  });

  it('paired differences: exact for a constant shift, zero for identical systems, per seed', () => {
    const b = [unit(0, pattern(0, 8)), unit(1, pattern(1, 4))];
    const a = b.map((u) => ({ ...u, perTask: u.perTask.map((x) => Math.min(1, x + 0.25)) }));
    const shift = pairedDifference(
      a.map((x, i) => ({ a: x, b: b[i]! })),
      { seed: 3 },
    );
    const expected = a.flatMap((u, i) => u.perTask.map((x, t) => x - b[i]!.perTask[t]!));
    const m = expected.reduce((x, y) => x + y, 0) / expected.length;
    expect(shift.diff).toBeCloseTo(m, 12);
    expect(shift.low).toBeLessThanOrEqual(shift.diff);
    expect(shift.high).toBeGreaterThanOrEqual(shift.diff);
    expect(shift.perSeed.map((s) => s.seed)).toEqual([0, 1]);
    const same = pairedDifference(b.map((x) => ({ a: x, b: x })));
    expect([same.diff, same.low, same.high]).toEqual([0, 0, 0]);
    const flat = pairedDifference([
      {
        a: unit(
          0,
          TASKS.map(() => 0.75),
        ),
        b: unit(
          0,
          TASKS.map(() => 0.5),
        ),
      },
    ]);
    expect([flat.diff, flat.low, flat.high]).toEqual([0.25, 0.25, 0.25]);
  });

  it('refuses to pair evaluations of different tasks', () => {
    const a = unit(0, [1, 0, 1]);
    const b = { ...unit(0, [1, 0, 1]), taskSeeds: [7, 8, 9] };
    expect(() => pairedDifference([{ a, b }])).toThrow(/different tasks/);
  });

  it('resamples within each family: a family with more tasks weighs more, as in the flat mean', () => {
    const units = [
      unit(
        0,
        TASKS.map(() => 1),
        'a',
      ),
      unit(
        0,
        TASKS.slice(0, 4).map(() => 0),
        'b',
      ),
    ];
    expect(pooledPassAt1(units).passAt1).toBeCloseTo(16 / 20, 12);
    expect(stableSeed('x')).toBe(stableSeed('x'));
    expect(stableSeed('x')).not.toBe(stableSeed('y'));
  });
});
