import { describe, expect, it } from 'vitest';
import { segmentLossWeights, SEGMENT_WEIGHTINGS } from './segment-weights.ts';

describe('segmentLossWeights', () => {
  it("'uniform' is 1 for every segment", () => {
    const w = segmentLossWeights({
      episode: Int32Array.from([0, 0, 1]),
      inLoss: Uint8Array.from([1, 1, 1]),
      mode: 'uniform',
    });
    expect(Array.from(w)).toEqual([1, 1, 1]);
  });

  it("'inverse-count' is 1/N per episode, scaled to mean 1 over the batch's segments", () => {
    // Episode 0 has 3 segments, episode 1 one: raw 1/3, 1/3, 1/3, 1 (mean 0.5); c = 4 / 2 = 2.
    const w = segmentLossWeights({
      episode: Int32Array.from([0, 0, 0, 1]),
      inLoss: Uint8Array.from([1, 1, 1, 1]),
      mode: 'inverse-count',
    });
    [2 / 3, 2 / 3, 2 / 3, 2].forEach((x, i) => expect(w[i]).toBeCloseTo(x, 12));
    expect(w.reduce((a, b) => a + b, 0) / 4).toBeCloseTo(1, 12);
    // Each episode's segments sum to the same total (c = 2): every episode counts once.
    expect(w[0]! + w[1]! + w[2]!).toBeCloseTo(w[3]!, 12);
  });

  it('segments outside the loss get 0 and do not count in N', () => {
    // Episode 0: segments 0 and 2 in the loss (N = 2), its summary (1) left out; episode 1: N = 1.
    // raw 1/2, 1/2, 1 over S' = 3 segments, E' = 2 episodes: c = 1.5.
    const w = segmentLossWeights({
      episode: Int32Array.from([0, 0, 0, 1]),
      inLoss: Uint8Array.from([1, 0, 1, 1]),
      mode: 'inverse-count',
    });
    [0.75, 0, 0.75, 1.5].forEach((x, i) => expect(w[i]).toBeCloseTo(x, 12));
    const none = segmentLossWeights({
      episode: Int32Array.from([0]),
      inLoss: Uint8Array.from([0]),
      mode: 'inverse-count',
    });
    expect(Array.from(none)).toEqual([0]);
  });

  it('rejects an unknown mode with the valid list', () => {
    expect(SEGMENT_WEIGHTINGS).toEqual(['uniform', 'inverse-count']);
    expect(() => segmentLossWeights({ episode: new Int32Array(0), inLoss: new Uint8Array(0), mode: '1/n' })).toThrow(
      /unknown segment weighting '1\/n'; valid: uniform, inverse-count/,
    );
  });
});
