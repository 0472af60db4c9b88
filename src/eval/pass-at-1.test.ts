import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { passAt1, wilsonInterval } from './pass-at-1.ts';

describe('wilsonInterval', () => {
  it('matches a hand-computed case (8/10 at 95%)', () => {
    const { low, high } = wilsonInterval({ p: 0.8, n: 10 });
    expect(low).toBeCloseTo(0.4902, 3);
    expect(high).toBeCloseTo(0.9433, 3);
  });
  it('is not degenerate at p = 0', () => {
    const { low, high } = wilsonInterval({ p: 0, n: 20 });
    expect(low).toBe(0);
    expect(high).toBeCloseTo(0.1611, 3);
  });
});

describe('passAt1', () => {
  it('averages task means, not pooled samples', () => {
    const r = passAt1([
      [1, 1, 1, 1],
      [0, 0, 0, 0, 0, 0, 0, 0],
    ]);
    expect(r.passAt1).toBeCloseTo(0.5, 12);
    expect(r.samples).toBe(12);
  });

  it('widens the interval when success clusters by task', () => {
    const independent = passAt1([
      [1, 0, 1, 0],
      [0, 1, 0, 1],
      [1, 0, 1, 0],
      [0, 1, 0, 1],
    ]);
    const clustered = passAt1([
      [1, 1, 1, 1],
      [0, 0, 0, 0],
      [1, 1, 1, 1],
      [0, 0, 0, 0],
    ]);
    expect(independent.passAt1).toBeCloseTo(clustered.passAt1, 12);
    expect(clustered.high - clustered.low).toBeGreaterThan(independent.high - independent.low + 0.05);
    expect(clustered.effectiveSamples).toBe(4); // one effective sample per task
    expect(independent.effectiveSamples).toBe(16);
  });

  it('always brackets the estimate inside [0, 1]', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 1, maxLength: 8 }), {
          minLength: 1,
          maxLength: 12,
        }),
        (o) => {
          const r = passAt1(o);
          return (
            r.low >= 0 && r.high <= 1 && r.low <= r.passAt1 + 1e-12 && r.passAt1 <= r.high + 1e-12 && r.high > r.low
          );
        },
      ),
    );
  });

  it('rejects empty tasks and out-of-range scores', () => {
    expect(() => passAt1([])).toThrow(/at least one task/);
    expect(() => passAt1([[1], []])).toThrow(/task 1 has no samples/);
    expect(() => passAt1([[2]])).toThrow(/outside/);
  });
});
