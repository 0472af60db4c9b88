import { describe, expect, it } from 'vitest';
import { explainedVariance, maskedCount, maskedMean } from './masked-stats.ts';

describe('masked metric reductions', () => {
  const masks = [Uint8Array.from([0, 1, 1]), Uint8Array.from([1])];
  it('maskedMean and maskedCount skip unmasked positions', () => {
    expect(maskedMean({ values: [[100, 1, 2], [3]], masks })).toBeCloseTo(2, 12);
    expect(maskedCount(masks)).toBe(3);
    expect(maskedMean({ values: [[1]], masks: [Uint8Array.from([0])] })).toBe(0);
  });
  it('explained variance: 1 for perfect predictions, 0 for the mean, NaN when targets are constant', () => {
    const targets = [Float32Array.from([9, 1, 2]), Float32Array.from([3])];
    expect(explainedVariance({ predictions: targets, targets, masks })).toBeCloseTo(1, 6);
    const mean = [Float32Array.from([0, 2, 2]), Float32Array.from([2])];
    expect(explainedVariance({ predictions: mean, targets, masks })).toBeCloseTo(0, 6);
    expect(
      explainedVariance({ predictions: mean, targets: [Float32Array.from([0, 1, 1]), Float32Array.from([1])], masks }),
    ).toBeNaN();
  });
});
