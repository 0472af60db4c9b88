import { describe, expect, it } from 'vitest';
import {
  advantageEstimatorNames,
  estimateAdvantages,
  getAdvantageEstimator,
  groupNormalizedRewards,
  type EpisodeAdvantageInput,
} from './advantage-estimators.ts';
import { computeSegmentAdvantages } from './segment-advantages.ts';

const ep = (taskKey: string, reward: number): EpisodeAdvantageInput => ({
  taskKey,
  reward,
  segments: [
    { kind: 'execution', lossMask: Uint8Array.from([0, 1, 1]), values: Float32Array.from([0, 0.2, 0.4]) },
    { kind: 'summary', lossMask: Uint8Array.from([0, 0, 1]), values: Float32Array.from([0, 0, 0.5]) },
  ],
});

describe('advantage-estimator registry', () => {
  it('lists its names and rejects an unknown one with the valid list', () => {
    expect(advantageEstimatorNames()).toEqual(['compaction-gae', 'broadcast', 'full-trajectory-gae']);
    expect(() => getAdvantageEstimator('grpo')).toThrow(
      /unknown advantage estimator 'grpo'; valid: compaction-gae, broadcast, full-trajectory-gae/,
    );
    expect(getAdvantageEstimator('full-trajectory-gae').needsCritic).toBe(true);
    expect(getAdvantageEstimator('broadcast').needsCritic).toBe(false);
    expect(getAdvantageEstimator('compaction-gae').needsCritic).toBe(true);
  });

  it("'compaction-gae' with {} uses the paper defaults and equals computeSegmentAdvantages per episode", () => {
    const episodes = [ep('a', 1), ep('b', 0)];
    const out = estimateAdvantages({ estimator: 'compaction-gae', episodes });
    episodes.forEach((e, i) => {
      const direct = computeSegmentAdvantages({
        segments: e.segments.map((s) => ({ kind: s.kind, lossMask: s.lossMask, values: s.values! })),
        reward: e.reward,
        gamma: 1,
        lambda: { lengthAdaptiveAlpha: 1.5 },
        lambdaCritic: 1,
        crossTrajectory: true,
      });
      direct.advantages.forEach((a, s) => expect(Array.from(out.advantages[i]![s]!)).toEqual(Array.from(a)));
      direct.returns.forEach((g, s) => expect(Array.from(out.returns[i]![s]!)).toEqual(Array.from(g)));
    });
  });

  it('config is strict and values are checked', () => {
    expect(() => estimateAdvantages({ estimator: 'compaction-gae', episodes: [], config: { gama: 1 } })).toThrow(
      /gama/,
    );
    expect(() => estimateAdvantages({ estimator: 'compaction-gae', episodes: [], config: { lambda: 2 } })).toThrow(
      /lambda/,
    );
    expect(() => estimateAdvantages({ estimator: 'broadcast', episodes: [], config: { eps: -1 } })).toThrow(/eps/);
  });

  it("'compaction-gae' with segmentReward 'split' / 'discounted': hand-computed local GAE", () => {
    // gamma 1, lambda 1, no correction: A_j = r_s - V(p_j), G_j = r_s. K = 2 segments.
    const run = (config: object) => {
      const out = estimateAdvantages({
        estimator: 'compaction-gae',
        episodes: [ep('a', 1)],
        config: { gamma: 1, lambda: 1, crossTrajectory: false, ...config },
      });
      return {
        a: out.advantages[0]!.map((x) => Array.from(x)),
        g: out.returns[0]!.map((x) => Array.from(x)),
      };
    };
    const near = (got: number[][], want: number[][]) =>
      want.forEach((row, s) => row.forEach((x, t) => expect(got[s]![t]).toBeCloseTo(x, 6)));
    // split: r = 1/2 for both segments.
    const split = run({ segmentReward: 'split' });
    near(split.a, [
      [0, 0.3, 0.1],
      [0, 0, 0],
    ]);
    near(split.g, [
      [0, 0.5, 0.5],
      [0, 0, 0.5],
    ]);
    // discounted 0.5: r_1 = 0.5^(2-1) * 1 = 0.5, r_2 = 1.
    const disc = run({ segmentReward: 'discounted', segmentDiscount: 0.5 });
    near(disc.a, [
      [0, 0.3, 0.1],
      [0, 0, 0.5],
    ]);
    near(disc.g, [
      [0, 0.5, 0.5],
      [0, 0, 1],
    ]);
    // shared is method §4: r = 1 for both.
    near(run({ segmentReward: 'shared' }).a, [
      [0, 0.8, 0.6],
      [0, 0, 0.5],
    ]);
    expect(() => run({ segmentReward: 'halves' })).toThrow(/segmentReward/);
  });

  it("'full-trajectory-gae' chains the segments: hand-computed, and strict about its config", () => {
    // Chain V = [0.2, 0.4, 0.5], R = 1, gamma 1, lambda 1: A_i = R - V_i = [0.8, 0.6, 0.5].
    const out = estimateAdvantages({ estimator: 'full-trajectory-gae', episodes: [ep('a', 1)], config: { lambda: 1 } });
    expect(Array.from(out.advantages[0]![0]!)).toEqual([0, expect.closeTo(0.8, 6), expect.closeTo(0.6, 6)]);
    expect(Array.from(out.advantages[0]![1]!)).toEqual([0, 0, expect.closeTo(0.5, 6)]);
    // lambda 0: A_i = delta_i = V_{i+1} - V_i across the boundary, R - V on the last token.
    const td = estimateAdvantages({ estimator: 'full-trajectory-gae', episodes: [ep('a', 1)], config: { lambda: 0 } });
    expect(Array.from(td.advantages[0]![0]!)).toEqual([0, expect.closeTo(0.2, 6), expect.closeTo(0.1, 6)]);
    expect(() =>
      estimateAdvantages({ estimator: 'full-trajectory-gae', episodes: [], config: { crossTrajectory: true } }),
    ).toThrow(/crossTrajectory/);
  });

  it('compaction-gae needs values', () => {
    const e: EpisodeAdvantageInput = {
      taskKey: 'a',
      reward: 1,
      segments: [{ kind: 'execution', lossMask: Uint8Array.from([1]) }],
    };
    expect(() => estimateAdvantages({ estimator: 'compaction-gae', episodes: [e] })).toThrow(/values is missing/);
  });
});

describe("'broadcast' (critic-free, method §7)", () => {
  it('group-normalizes with the sample std; a single-episode group uses mean 0, std 1', () => {
    // Group a: rewards 1, 0, 0 -> mean 1/3, sample std sqrt(1/3).
    const z = groupNormalizedRewards({
      episodes: [
        { taskKey: 'a', reward: 1 },
        { taskKey: 'a', reward: 0 },
        { taskKey: 'b', reward: 0.5 },
        { taskKey: 'a', reward: 0 },
      ],
      eps: 1e-6,
    });
    const std = Math.sqrt(1 / 3);
    expect(z[0]).toBeCloseTo(2 / 3 / (std + 1e-6), 9);
    expect(z[1]).toBeCloseTo(-1 / 3 / (std + 1e-6), 9);
    expect(z[3]).toBeCloseTo(z[1]!, 12);
    expect(z[2]).toBeCloseTo(0.5 / (1 + 1e-6), 9);
    // Identical rewards in a group: 0, not NaN.
    expect(
      groupNormalizedRewards({
        episodes: [
          { taskKey: 'a', reward: 1 },
          { taskKey: 'a', reward: 1 },
        ],
        eps: 1e-6,
      }),
    ).toEqual([0, 0]);
  });

  it('broadcasts the normalized reward to every generated token of every segment, R as return', () => {
    const out = estimateAdvantages({ estimator: 'broadcast', episodes: [ep('a', 1), ep('a', 0)] });
    const z = (1 - 0.5) / (Math.sqrt(0.5) + 1e-6);
    expect(Array.from(out.advantages[0]![0]!)).toEqual([0, expect.closeTo(z, 5), expect.closeTo(z, 5)]);
    expect(Array.from(out.advantages[0]![1]!)).toEqual([0, 0, expect.closeTo(z, 5)]);
    expect(Array.from(out.advantages[1]![0]!)).toEqual([0, expect.closeTo(-z, 5), expect.closeTo(-z, 5)]);
    expect(Array.from(out.returns[0]![0]!)).toEqual([0, 1, 1]);
    expect(Array.from(out.returns[1]![1]!)).toEqual([0, 0, 0]);
  });
});
