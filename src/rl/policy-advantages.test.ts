import { describe, expect, it } from 'vitest';
import { policyAdvantages } from './policy-advantages.ts';

// Episode 0: an execution window and its summary; episode 1: one window.
const segments = [
  { kind: 'execution' as const, episode: 0, segmentsAfter: 1 },
  { kind: 'summary' as const, episode: 0, segmentsAfter: 0 },
  { kind: 'execution' as const, episode: 1, segmentsAfter: 0 },
];
const advantages = [Float32Array.from([0, 2, 4]), Float32Array.from([0, -1]), Float32Array.from([3, 3])];
const masks = [Uint8Array.from([0, 1, 1]), Uint8Array.from([0, 1]), Uint8Array.from([1, 1])];

describe('policyAdvantages', () => {
  it('whitening none and uniform weights: the estimator advantages unchanged', () => {
    const out = policyAdvantages({ segments, advantages, masks, whiten: 'none' });
    expect(out.map((a) => Array.from(a))).toEqual(advantages.map((a) => Array.from(a)));
  });

  it('inverse-count multiplies each segment after whitening: 3 segments, 2 episodes, c = 1.5', () => {
    // Episode 0 has N = 2 (weights 0.75), episode 1 N = 1 (weight 1.5).
    const out = policyAdvantages({ segments, advantages, masks, whiten: false, segmentWeights: 'inverse-count' });
    expect(out.map((a) => Array.from(a))).toEqual([
      [0, 1.5, 3],
      [0, -0.75],
      [4.5, 4.5],
    ]);
  });

  it('per-position whitening, then weights: position 1 [2, 4] -> [-1/sqrt2, 1/sqrt2] x 0.75', () => {
    const out = policyAdvantages({
      segments,
      advantages,
      masks,
      whiten: 'per-position',
      segmentWeights: 'inverse-count',
    });
    expect(out[0]![1]).toBeCloseTo(-0.75 * Math.SQRT1_2, 6);
    expect(out[0]![2]).toBeCloseTo(0.75 * Math.SQRT1_2, 6);
    // Position 0: [-1, 3, 3], mean 5/3, sample std sqrt(16/3); the summary token gets weight 0.75.
    expect(out[1]![1]).toBeCloseTo((0.75 * (-1 - 5 / 3)) / Math.sqrt(16 / 3), 5);
    expect(out[2]![0]).toBeCloseTo((1.5 * (3 - 5 / 3)) / Math.sqrt(16 / 3), 5);
  });

  it('names the missing field when a mode needs the episode', () => {
    expect(() =>
      policyAdvantages({
        segments: segments.map(({ kind }) => ({ kind })),
        advantages,
        masks,
        whiten: true,
        segmentWeights: 'inverse-count',
      }),
    ).toThrow(/segments\[0\]\.episode/);
  });
});
