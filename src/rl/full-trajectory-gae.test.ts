import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { fullTrajectoryAdvantages, generationChain } from './full-trajectory-gae.ts';
import { computeSegmentAdvantages, localGae, generatedPositions } from './segment-advantages.ts';

// exec_1 generates 2 tokens, sum_1 one, exec_2 one; 9 marks values the chain must never read.
const episode = () => [
  { lossMask: Uint8Array.from([0, 1, 1]), values: Float32Array.from([9, 0.2, 0.4]) },
  { lossMask: Uint8Array.from([0, 0, 1]), values: Float32Array.from([9, 9, 0.5]) },
  { lossMask: Uint8Array.from([0, 1]), values: Float32Array.from([9, 0.8]) },
];
const generated = (xs: Float32Array[], masks: Uint8Array[]) =>
  xs.flatMap((x, s) => Array.from(x).filter((_, t) => masks[s]![t] === 1));

describe('fullTrajectoryAdvantages', () => {
  it('chains the segments in time order: hand-computed with gamma 1, lambda 0.5', () => {
    // V = [0.2, 0.4, 0.5, 0.8], R = 1 on the last token:
    // delta = [0.2, 0.1, 0.3, 0.2]; A4 = 0.2, A3 = 0.3 + 0.1 = 0.4, A2 = 0.1 + 0.2 = 0.3, A1 = 0.2 + 0.15 = 0.35.
    // lambdaCritic 0: G_i = r_i + V_{i+1} = [0.4, 0.5, 0.8, 1].
    const segs = episode();
    const out = fullTrajectoryAdvantages({ segments: segs, reward: 1, gamma: 1, lambda: 0.5, lambdaCritic: 0 });
    const masks = segs.map((s) => s.lossMask);
    const a = generated(out.advantages, masks);
    [0.35, 0.3, 0.4, 0.2].forEach((x, i) => expect(a[i]).toBeCloseTo(x, 6));
    const g = generated(out.returns, masks);
    [0.4, 0.5, 0.8, 1].forEach((x, i) => expect(g[i]).toBeCloseTo(x, 6));
    // Masked positions stay 0.
    expect(out.advantages[0]![0]).toBe(0);
    expect(out.returns[1]![1]).toBe(0);
  });

  it('hand-computed with gamma 0.5, lambda 1: A_i = gamma^(N-i) R - V_i across the boundaries', () => {
    const segs = episode();
    const out = fullTrajectoryAdvantages({ segments: segs, reward: 1, gamma: 0.5, lambda: 1, lambdaCritic: 1 });
    const masks = segs.map((s) => s.lossMask);
    const a = generated(out.advantages, masks);
    [-0.075, -0.15, 0, 0.2].forEach((x, i) => expect(a[i]).toBeCloseTo(x, 6));
    const g = generated(out.returns, masks);
    [0.125, 0.25, 0.5, 1].forEach((x, i) => expect(g[i]).toBeCloseTo(x, 6));
  });

  it('a segment that generated nothing is skipped: the bootstrap goes to the next one that did', () => {
    const segs = episode();
    const withEmpty = [
      segs[0]!,
      segs[1]!,
      { lossMask: new Uint8Array(2), values: Float32Array.from([3, 3]) },
      segs[2]!,
    ];
    const a = fullTrajectoryAdvantages({ segments: segs, reward: 1, gamma: 1, lambda: 0.5, lambdaCritic: 1 });
    const b = fullTrajectoryAdvantages({ segments: withEmpty, reward: 1, gamma: 1, lambda: 0.5, lambdaCritic: 1 });
    expect(Array.from(b.advantages[3]!)).toEqual(Array.from(a.advantages[2]!));
    expect(Array.from(b.advantages[0]!)).toEqual(Array.from(a.advantages[0]!));
    expect(Array.from(b.advantages[2]!)).toEqual([0, 0]);
  });

  it('on an episode without compaction it is ordinary GAE, and equals method §4 local GAE', () => {
    const seg = {
      lossMask: Uint8Array.from([0, 1, 0, 1, 1, 0, 1]),
      values: Float32Array.from([5, 0.1, 5, -0.3, 0.6, 5, 0.2]),
    };
    const lambda = { lengthAdaptiveAlpha: 1.5 };
    const out = fullTrajectoryAdvantages({ segments: [seg], reward: 1, gamma: 0.9, lambda, lambdaCritic: 1 });
    // Ordinary GAE over the 4 generated tokens with lambda = 1 - 1/(1.5 * 4).
    const v = [0.1, -0.3, 0.6, 0.2];
    const lam = 1 - 1 / 6;
    const want: number[] = [];
    let acc = 0;
    for (let i = 3; i >= 0; i--) {
      const delta = (i === 3 ? 1 : 0) + 0.9 * (i === 3 ? 0 : v[i + 1]!) - v[i]!;
      acc = delta + 0.9 * lam * acc;
      want[i] = acc;
    }
    expect(
      generated(out.advantages, [seg.lossMask])
        .map((x, i) => x - want[i]!)
        .every((d) => Math.abs(d) < 1e-6),
    ).toBe(true);
    const local = computeSegmentAdvantages({
      segments: [{ kind: 'execution', ...seg }],
      reward: 1,
      gamma: 0.9,
      lambda,
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    expect(Array.from(out.advantages[0]!)).toEqual(Array.from(local.advantages[0]!));
    expect(Array.from(out.returns[0]!)).toEqual(Array.from(local.returns[0]!));
    const direct = localGae({
      values: seg.values,
      positions: generatedPositions(seg.lossMask),
      reward: 1,
      gamma: 0.9,
      lambda: lam,
    });
    direct.forEach((x, i) => expect(generated(out.advantages, [seg.lossMask])[i]).toBeCloseTo(x, 6));
  });

  it('uses the episode length for the length-adaptive lambda', () => {
    const segs = episode(); // 4 generated tokens: lambda = 1 - 1/6
    const adaptive = fullTrajectoryAdvantages({
      segments: segs,
      reward: 1,
      gamma: 1,
      lambda: { lengthAdaptiveAlpha: 1.5 },
      lambdaCritic: 1,
    });
    const fixed = fullTrajectoryAdvantages({ segments: segs, reward: 1, gamma: 1, lambda: 1 - 1 / 6, lambdaCritic: 1 });
    expect(Array.from(adaptive.advantages.flatMap((a) => Array.from(a)))).toEqual(
      Array.from(fixed.advantages.flatMap((a) => Array.from(a))),
    );
  });

  it('values outside the loss mask cannot change anything', () => {
    const a = fullTrajectoryAdvantages({ segments: episode(), reward: 1, gamma: 0.95, lambda: 0.7, lambdaCritic: 1 });
    const noisy = episode().map((s) => ({ ...s, values: s.values.map((v, t) => (s.lossMask[t] ? v : -123)) }));
    const b = fullTrajectoryAdvantages({ segments: noisy, reward: 1, gamma: 0.95, lambda: 0.7, lambdaCritic: 1 });
    expect(a).toEqual(b);
  });

  it('the backward recursion equals the finite sum sum_l (gamma lambda)^l delta_{i+l} on random episodes', () => {
    const rng = new Rng(7);
    for (let trial = 0; trial < 20; trial++) {
      const segments = Array.from({ length: 1 + rng.int(5) }, () => {
        const T = 1 + rng.int(8);
        return {
          lossMask: Uint8Array.from({ length: T }, () => (rng.next() < 0.6 ? 1 : 0)),
          values: Float32Array.from({ length: T }, () => rng.normal()),
        };
      });
      const gamma = 0.8 + 0.2 * rng.next();
      const lambda = rng.next();
      const reward = rng.next() < 0.5 ? 1 : 0;
      const out = fullTrajectoryAdvantages({ segments, reward, gamma, lambda, lambdaCritic: 1 });
      const v = Array.from(generationChain(segments).values);
      const n = v.length;
      const delta = v.map((x, i) => (i === n - 1 ? reward : 0) + gamma * (i + 1 < n ? v[i + 1]! : 0) - x);
      const loop = v.map((_, i) => delta.slice(i).reduce((acc, d, l) => acc + (gamma * lambda) ** l * d, 0));
      const got = generated(
        out.advantages,
        segments.map((s) => s.lossMask),
      );
      loop.forEach((x, i) => expect(got[i]).toBeCloseTo(x, 5));
    }
  });

  it('rejects bad input with a message naming the field', () => {
    expect(() =>
      fullTrajectoryAdvantages({ segments: episode(), reward: NaN, gamma: 1, lambda: 1, lambdaCritic: 1 }),
    ).toThrow(/reward/);
    const bad = episode();
    bad[1] = { ...bad[1]!, values: Float32Array.from([0, 0, Infinity]) };
    expect(() => fullTrajectoryAdvantages({ segments: bad, reward: 1, gamma: 1, lambda: 1, lambdaCritic: 1 })).toThrow(
      /segments\[1\]\.values\[2\]/,
    );
  });
});
