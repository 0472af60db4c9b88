import { describe, expect, it } from 'vitest';
import { computeSegmentAdvantages, segmentLambda, type SegmentAdvantageInput } from './segment-advantages.ts';

const seg = (kind: SegmentAdvantageInput['kind'], values: number[], mask: number[]): SegmentAdvantageInput => ({
  kind,
  values: Float32Array.from(values),
  lossMask: Uint8Array.from(mask),
});
const TOL = 6; // toBeCloseTo digits (float32 storage)

// Three segments (exec, summary, exec). Non-generated positions hold 9 to show they are transparent.
const episode = (): SegmentAdvantageInput[] => [
  seg('execution', [9, 0.2, 0.4, 9, 0.5], [0, 1, 1, 0, 1]), // n = 3
  seg('summary', [9, 9, 0.6, 0.3], [0, 0, 1, 1]), // n = 2
  seg('execution', [9, 0.7, 9], [0, 1, 0]), // n = 1
];

describe('computeSegmentAdvantages: hand-computed clauses (method §4)', () => {
  it('length-adaptive lambda with cross-trajectory correction over exec/summary/exec', () => {
    const { advantages } = computeSegmentAdvantages({
      segments: episode(),
      reward: 1,
      gamma: 1,
      lambda: { lengthAdaptiveAlpha: 1.5 },
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    // seg0: n = 3 -> lambda = 1 - 1/4.5 = 7/9; N_after = 2 + 1 = 3.
    // deltas: 0.4-0.2, 0.5-0.4, 1-0.5 (R at the last generated token, V(p_{n+1}) = 0).
    const l0 = 7 / 9;
    const a03 = 0.5;
    const a02 = 0.1 + l0 * a03;
    const a01 = 0.2 + l0 * a02;
    const f0 = l0 ** 3;
    const expected0 = [0, a01 * f0, a02 * f0, 0, a03 * f0];
    expected0.forEach((e, t) => expect(advantages[0]![t]).toBeCloseTo(e, TOL));
    expect(advantages[0]![0]).toBe(0);
    // seg1: n = 2 -> lambda = 2/3; N_after = 1. deltas: 0.3-0.6, 1-0.3.
    const l1 = 2 / 3;
    expect(advantages[1]![2]).toBeCloseTo((-0.3 + l1 * 0.7) * l1, TOL);
    expect(advantages[1]![3]).toBeCloseTo(0.7 * l1, TOL);
    expect(advantages[1]![0]).toBe(0);
    // seg2: last segment, n = 1, never discounted: A = R - V.
    expect(Array.from(advantages[2]!)).toEqual([0, expect.closeTo(0.3, TOL), 0]);
  });

  it('crossTrajectory: false leaves the local GAE untouched (the ablation)', () => {
    const { advantages } = computeSegmentAdvantages({
      segments: episode(),
      reward: 1,
      gamma: 1,
      lambda: { lengthAdaptiveAlpha: 1.5 },
      lambdaCritic: 1,
      crossTrajectory: false,
    });
    expect(advantages[0]![1]).toBeCloseTo(0.2 + (7 / 9) * (0.1 + (7 / 9) * 0.5), TOL);
    expect(advantages[1]![2]).toBeCloseTo(-0.3 + (2 / 3) * 0.7, TOL);
  });

  it('fixed lambda and gamma < 1: factor (gamma*lambda)^N_after, reward R in every segment', () => {
    const segments = [seg('execution', [0, 0.5, 0.25], [0, 1, 1]), seg('execution', [0, 0.5], [0, 1])];
    const { advantages } = computeSegmentAdvantages({
      segments,
      reward: 2,
      gamma: 0.9,
      lambda: 0.5,
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    // seg0 local: delta2 = 2 - 0.25 = 1.75; delta1 = 0.9*0.25 - 0.5 = -0.275; A1 = -0.275 + 0.45*1.75 = 0.5125.
    const f = 0.45 ** 1;
    expect(advantages[0]![1]).toBeCloseTo(0.5125 * f, TOL);
    expect(advantages[0]![2]).toBeCloseTo(1.75 * f, TOL);
    expect(advantages[1]![1]).toBeCloseTo(1.5, TOL);
  });

  it('critic returns G_j = A_loc_j(lambdaCritic) + V(p_j), never corrected', () => {
    const segments = [seg('execution', [0, 0.2, 7, 0.4], [0, 1, 0, 1]), seg('summary', [0, 0.1], [0, 1])];
    const base = { segments, reward: 1, gamma: 0.5, lambda: 0.3, crossTrajectory: true } as const;
    const r1 = computeSegmentAdvantages({ ...base, lambdaCritic: 1 });
    // lambdaCritic = 1: discounted Monte-Carlo return inside the segment: gamma*R, R.
    expect(r1.returns[0]![1]).toBeCloseTo(0.5, TOL);
    expect(r1.returns[0]![3]).toBeCloseTo(1, TOL);
    expect(r1.returns[0]![2]).toBe(0);
    expect(r1.returns[1]![1]).toBeCloseTo(1, TOL);
    const r0 = computeSegmentAdvantages({ ...base, lambdaCritic: 0 });
    // lambdaCritic = 0: one-step target r_j + gamma V(p_{j+1}).
    expect(r0.returns[0]![1]).toBeCloseTo(0.5 * 0.4, TOL);
    expect(r0.returns[0]![3]).toBeCloseTo(1, TOL);
  });

  it('a segment with no generated token gets zeros and adds nothing to N_after', () => {
    const segments = [
      seg('execution', [0, 0.5], [0, 1]),
      seg('summary', [1, 2, 3], [0, 0, 0]),
      seg('execution', [0, 0.25, 0.5], [0, 1, 1]),
    ];
    const { advantages, returns } = computeSegmentAdvantages({
      segments,
      reward: 1,
      gamma: 1,
      lambda: 0.5,
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    expect(Array.from(advantages[1]!)).toEqual([0, 0, 0]);
    expect(Array.from(returns[1]!)).toEqual([0, 0, 0]);
    expect(advantages[0]![1]).toBeCloseTo(0.5 * 0.5 ** 2, TOL); // N_after = 2
  });

  it('an empty episode and an episode with zero-length segments are legal', () => {
    expect(
      computeSegmentAdvantages({ segments: [], reward: 1, gamma: 1, lambda: 1, lambdaCritic: 1, crossTrajectory: true })
        .advantages,
    ).toEqual([]);
    const r = computeSegmentAdvantages({
      segments: [seg('execution', [], [])],
      reward: 1,
      gamma: 1,
      lambda: 1,
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    expect(r.advantages[0]!.length).toBe(0);
  });

  it('alpha * n_s <= 1 follows the formula literally without NaN', () => {
    expect(segmentLambda({ lengthAdaptiveAlpha: 1 }, 1)).toBe(0);
    expect(segmentLambda({ lengthAdaptiveAlpha: 0.5 }, 1)).toBe(-1);
    expect(segmentLambda({ lengthAdaptiveAlpha: 1.5 }, 0)).toBe(0);
    // alpha = 1, n = 1 -> lambda_s = 0: factor 0^N_after = 0 for earlier segments.
    const segments = [seg('execution', [0, 0.5], [0, 1]), seg('execution', [0, 0.5], [0, 1])];
    const a = computeSegmentAdvantages({
      segments,
      reward: 1,
      gamma: 1,
      lambda: { lengthAdaptiveAlpha: 1 },
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    expect(a.advantages[0]![1]).toBe(0);
    expect(a.advantages[1]![1]).toBeCloseTo(0.5, TOL); // 0^0 = 1: last segment kept
    // alpha = 0.5, n = 1 -> lambda_s = -1: factor (-1)^1 flips the sign, still finite.
    const b = computeSegmentAdvantages({
      segments,
      reward: 1,
      gamma: 1,
      lambda: { lengthAdaptiveAlpha: 0.5 },
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    expect(b.advantages[0]![1]).toBeCloseTo(-0.5, TOL);
    // |lambda_s| > 1 with many later tokens overflows: a clear error instead of Infinity/NaN.
    const long = seg('execution', new Array(500).fill(0), new Array(500).fill(1));
    expect(() =>
      computeSegmentAdvantages({
        segments: [segments[0]!, long],
        reward: 1,
        gamma: 1,
        lambda: { lengthAdaptiveAlpha: 0.1 },
        lambdaCritic: 1,
        crossTrajectory: true,
      }),
    ).toThrow(/overflow/);
  });

  it('bad input names the problem', () => {
    const ok = { reward: 1, gamma: 1, lambda: 1, lambdaCritic: 1, crossTrajectory: true } as const;
    expect(() => computeSegmentAdvantages({ ...ok, segments: [seg('execution', [0, 1], [0])] })).toThrow(
      /segments\[0\] values vs lossMask/,
    );
    expect(() => computeSegmentAdvantages({ ...ok, segments: [seg('execution', [0, NaN], [0, 1])] })).toThrow(
      /values\[1\]/,
    );
    expect(() => computeSegmentAdvantages({ ...ok, segments: [seg('execution', [0, 1], [0, 2])] })).toThrow(
      /lossMask\[1\]/,
    );
    expect(() => computeSegmentAdvantages({ ...ok, reward: NaN, segments: [] })).toThrow(/reward/);
    expect(() => computeSegmentAdvantages({ ...ok, lambda: { lengthAdaptiveAlpha: 0 }, segments: [] })).toThrow(
      /lengthAdaptiveAlpha/,
    );
    expect(() => computeSegmentAdvantages({ ...ok, gamma: 1.5, segments: [] })).toThrow(/gamma/);
    expect(() =>
      computeSegmentAdvantages({ ...ok, segments: [{ ...seg('execution', [0], [0]), kind: 'bogus' as 'execution' }] }),
    ).toThrow(/kind/);
    // NaN at a non-generated position is transparent, not an error.
    expect(() => computeSegmentAdvantages({ ...ok, segments: [seg('execution', [NaN, 1], [0, 1])] })).not.toThrow();
  });
});
