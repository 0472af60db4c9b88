import { describe, expect, it } from 'vitest';
import { segmentRewards, SEGMENT_REWARD_MODES } from './segment-rewards.ts';

const at = (mode: string, generated: number[], discount?: number) =>
  Array.from(segmentRewards({ reward: 2, generated, mode, ...(discount !== undefined ? { discount } : {}) }));

describe('segmentRewards', () => {
  it("'shared' gives every segment R (method §4)", () => {
    expect(at('shared', [3, 1, 4])).toEqual([2, 2, 2]);
  });

  it("'split' gives R / K, K = segments that generated something", () => {
    expect(at('split', [3, 1, 4, 2])).toEqual([0.5, 0.5, 0.5, 0.5]);
    // The empty segment gets 0 and does not count in K = 2.
    expect(at('split', [3, 0, 4])).toEqual([1, 0, 1]);
  });

  it("'discounted' gives gamma^(K-k) R: 0.5^2 * 2, 0.5 * 2, 2", () => {
    expect(at('discounted', [3, 1, 4], 0.5)).toEqual([0.5, 1, 2]);
    // Default discount 0.9: 0.81 * 2, 0.9 * 2, 2.
    at('discounted', [1, 1, 1]).forEach((x, i) => expect(x).toBeCloseTo([1.62, 1.8, 2][i]!, 12));
  });

  it('rejects an unknown mode listing the valid ones, and a discount outside [0, 1]', () => {
    expect(SEGMENT_REWARD_MODES).toEqual(['shared', 'split', 'discounted']);
    expect(() => at('halves', [1])).toThrow(/unknown segment reward 'halves'; valid: shared, split, discounted/);
    expect(() => at('discounted', [1], 1.5)).toThrow(/discount must be in \[0, 1\]/);
  });
});
