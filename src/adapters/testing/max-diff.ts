import { expect } from 'vitest';

/** The largest |a[i] − b[i]| over a's length (parity bounds of the torch trainer's tests). */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** The largest difference over per-sequence arrays, which must have the same lengths. */
export function maxAbsDiffs(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  let m = 0;
  a.forEach((x, i) => {
    expect(b[i]!.length).toBe(x.length);
    m = Math.max(m, maxAbsDiff(x, b[i]!));
  });
  return m;
}
