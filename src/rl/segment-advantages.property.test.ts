/**
 * Properties of computeSegmentAdvantages and a reference loop implementation written
 * straight from the method §4 formulas (explicit sums and powers, no recursion), compared with the
 * fast backward-recursion version on random episodes.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { computeSegmentAdvantages, type LambdaSpec, type SegmentAdvantageInput } from './segment-advantages.ts';

const segmentArb = fc
  .array(fc.record({ m: fc.boolean(), v: fc.float({ min: -2, max: 2, noNaN: true }) }), { minLength: 0, maxLength: 8 })
  .chain((cells) =>
    fc.constantFrom<'execution' | 'summary'>('execution', 'summary').map((kind) => ({
      kind,
      values: Float32Array.from(cells, (c) => c.v),
      lossMask: Uint8Array.from(cells, (c) => (c.m ? 1 : 0)),
    })),
  );
const episodeArb = fc.array(segmentArb, { minLength: 1, maxLength: 4 });
const lambdaArb: fc.Arbitrary<LambdaSpec> = fc.oneof(
  fc.double({ min: 0, max: 1, noNaN: true }),
  fc.double({ min: 0.5, max: 4, noNaN: true }).map((a) => ({ lengthAdaptiveAlpha: a })),
);
const paramsArb = fc.record({
  reward: fc.double({ min: -1, max: 2, noNaN: true }),
  gamma: fc.double({ min: 0, max: 1, noNaN: true }),
  lambda: lambdaArb,
  lambdaCritic: fc.double({ min: 0, max: 1, noNaN: true }),
  crossTrajectory: fc.boolean(),
});

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-5): void => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThanOrEqual(tol * (1 + Math.abs(b[i]!)));
};

/** Method §4, literally: explicit sums over l and an explicit product for the correction. */
function reference(options: {
  segments: SegmentAdvantageInput[];
  reward: number;
  gamma: number;
  lambda: LambdaSpec;
  lambdaCritic: number;
  crossTrajectory: boolean;
}): { advantages: number[][]; returns: number[][] } {
  const { segments, reward, gamma, lambda, lambdaCritic, crossTrajectory } = options;
  const pos = segments.map((s) => [...s.lossMask.keys()].filter((t) => s.lossMask[t] === 1));
  const aLoc = (s: number, lam: number): number[] => {
    const p = pos[s]!;
    const V = (j: number): number => (j < p.length ? segments[s]!.values[p[j]!]! : 0);
    const delta = p.map((_, j) => (j === p.length - 1 ? reward : 0) + gamma * V(j + 1) - V(j));
    return p.map((_, j) => {
      let sum = 0;
      for (let l = 0; l <= p.length - 1 - j; l++) sum += (gamma * lam) ** l * delta[j + l]!;
      return sum;
    });
  };
  const advantages: number[][] = [];
  const returns: number[][] = [];
  segments.forEach((seg, s) => {
    const n = pos[s]!.length;
    const lam = typeof lambda === 'number' ? lambda : n > 0 ? 1 - 1 / (lambda.lengthAdaptiveAlpha * n) : 0;
    let nAfter = 0;
    for (let r = s + 1; r < segments.length; r++) nAfter += pos[r]!.length;
    let factor = 1;
    if (crossTrajectory) for (let k = 0; k < nAfter; k++) factor *= gamma * lam;
    const adv = new Array<number>(seg.values.length).fill(0);
    const ret = new Array<number>(seg.values.length).fill(0);
    const a = aLoc(s, lam);
    const c = aLoc(s, lambdaCritic);
    pos[s]!.forEach((t, j) => {
      adv[t] = factor * a[j]!;
      ret[t] = c[j]! + seg.values[t]!;
    });
    advantages.push(adv);
    returns.push(ret);
  });
  return { advantages, returns };
}

describe('computeSegmentAdvantages properties (fast-check)', () => {
  it('matches the reference loop implementation on random episodes', () => {
    fc.assert(
      fc.property(episodeArb, paramsArb, (segments, p) => {
        const fast = computeSegmentAdvantages({ segments, ...p });
        const ref = reference({ segments, ...p });
        segments.forEach((_, s) => {
          close(fast.advantages[s]!, ref.advantages[s]!);
          close(fast.returns[s]!, ref.returns[s]!);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('values at non-generated positions never change any output', () => {
    fc.assert(
      fc.property(episodeArb, paramsArb, fc.double({ min: -100, max: 100, noNaN: true }), (segments, p, junk) => {
        const a = computeSegmentAdvantages({ segments, ...p });
        const perturbed = segments.map((seg) => ({
          ...seg,
          values: seg.values.map((v, t) => (seg.lossMask[t] === 1 ? v : junk)),
        }));
        const b = computeSegmentAdvantages({ segments: perturbed, ...p });
        segments.forEach((_, s) => {
          expect(Array.from(b.advantages[s]!)).toEqual(Array.from(a.advantages[s]!));
          expect(Array.from(b.returns[s]!)).toEqual(Array.from(a.returns[s]!));
        });
      }),
    );
  });

  it('outputs are 0 wherever lossMask is 0', () => {
    fc.assert(
      fc.property(episodeArb, paramsArb, (segments, p) => {
        const r = computeSegmentAdvantages({ segments, ...p });
        segments.forEach((seg, s) => {
          seg.lossMask.forEach((m, t) => {
            if (m === 0) {
              expect(r.advantages[s]![t]).toBe(0);
              expect(r.returns[s]![t]).toBe(0);
            }
          });
        });
      }),
    );
  });

  it('crossTrajectory: false equals each segment computed alone (the local result)', () => {
    fc.assert(
      fc.property(episodeArb, paramsArb, (segments, p) => {
        const r = computeSegmentAdvantages({ segments, ...p, crossTrajectory: false });
        segments.forEach((seg, s) => {
          const alone = computeSegmentAdvantages({ segments: [seg], ...p, crossTrajectory: true });
          expect(Array.from(r.advantages[s]!)).toEqual(Array.from(alone.advantages[0]!));
          expect(Array.from(r.returns[s]!)).toEqual(Array.from(alone.returns[0]!));
        });
      }),
    );
  });

  it('lambda = 1 and gamma = 1 give R - V at every generated token', () => {
    fc.assert(
      fc.property(
        episodeArb,
        fc.double({ min: -1, max: 2, noNaN: true }),
        fc.boolean(),
        (segments, reward, crossTrajectory) => {
          const r = computeSegmentAdvantages({
            segments,
            reward,
            gamma: 1,
            lambda: 1,
            lambdaCritic: 1,
            crossTrajectory,
          });
          segments.forEach((seg, s) => {
            seg.lossMask.forEach((m, t) => {
              if (m === 1) {
                expect(r.advantages[s]![t]!).toBeCloseTo(reward - seg.values[t]!, 5);
                expect(r.returns[s]![t]!).toBeCloseTo(reward, 5);
              }
            });
          });
        },
      ),
    );
  });

  it('the last segment is never discounted, and critic returns never are', () => {
    fc.assert(
      fc.property(episodeArb, paramsArb, (segments, p) => {
        const on = computeSegmentAdvantages({ segments, ...p, crossTrajectory: true });
        const off = computeSegmentAdvantages({ segments, ...p, crossTrajectory: false });
        const last = segments.length - 1;
        expect(Array.from(on.advantages[last]!)).toEqual(Array.from(off.advantages[last]!));
        segments.forEach((_, s) => expect(Array.from(on.returns[s]!)).toEqual(Array.from(off.returns[s]!)));
      }),
    );
  });

  it('with gamma*lambda_s in [0, 1] the correction only shrinks advantages', () => {
    fc.assert(
      fc.property(episodeArb, paramsArb, (segments, p) => {
        const lambda =
          typeof p.lambda === 'number' ? p.lambda : { lengthAdaptiveAlpha: Math.max(1, p.lambda.lengthAdaptiveAlpha) };
        const on = computeSegmentAdvantages({ segments, ...p, lambda, crossTrajectory: true });
        const off = computeSegmentAdvantages({ segments, ...p, lambda, crossTrajectory: false });
        segments.forEach((_, s) =>
          on.advantages[s]!.forEach((a, t) =>
            expect(Math.abs(a)).toBeLessThanOrEqual(Math.abs(off.advantages[s]![t]!) + 1e-6),
          ),
        );
      }),
    );
  });
});
