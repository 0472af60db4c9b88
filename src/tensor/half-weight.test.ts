/**
 * x @ W^T with W in f16 / bf16 (half-weight.ts), on whichever backend this process runs (CI runs
 * the file with the native addon and again with CRL_NATIVE=0): against the reference GEMM over
 * the same rounded weights (only the order of the f32 sums may differ), against the f32 product
 * (the rounding of W is the only error, within its bound), and row by row against a batch of one
 * (a row's result must not depend on the rows beside it).
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { gemmRef } from './gemm-ref.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half-float.ts';
import { gemmHalf, HALF_FORMATS, halfWeight, type HalfFormat } from './half-weight.ts';
import { nativeStatus } from './native.ts';

function filled(len: number, rng: Rng, scale = 1): Float32Array {
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = (rng.next() * 2 - 1) * scale;
  return out;
}

/** W's values after rounding to the format, as f32 (what the half product should multiply by). */
function rounded(w: Float32Array, format: HalfFormat): Float32Array {
  return format === 'f16' ? f16ToF32(f32ToF16(w)) : bf16ToF32(f32ToBf16(w));
}

/** |A| @ |W|^T [M, N]: the scale every error bound below is relative to. */
function magnitudes(a: Float32Array, w: Float32Array, m: number, n: number, k: number): Float32Array {
  const out = new Float32Array(m * n);
  gemmRef({ a: a.map(Math.abs), b: w.map(Math.abs), c: out, m, n, k, transB: true });
  return out;
}

// Unit roundoff of each format: a weight's relative error after rounding to nearest.
const ROUNDOFF: Record<HalfFormat, number> = { f16: 2 ** -11, bf16: 2 ** -8 };

// m = 1 and 8 are decode steps, 37 takes the native kernel's many-rows path; n 70 leaves a ragged
// last panel, k 300 a second, ragged K block.
const SHAPES = [
  { m: 1, n: 70, k: 300 },
  { m: 8, n: 64, k: 256 },
  { m: 37, n: 45, k: 33 },
];

describe(`half-precision weights (${nativeStatus().available ? 'native' : 'TypeScript'} kernels)`, () => {
  for (const format of HALF_FORMATS) {
    for (const { m, n, k } of SHAPES) {
      it(`${format} ${m}x${n}x${k}: the rounded weights' product, within its bound of the f32 one`, () => {
        const rng = new Rng(m * 1000 + n + k);
        const a = filled(m * k, rng);
        const w = filled(n * k, rng, 0.05);
        const half = halfWeight({ weight: w, n, k, format });
        for (const accumulate of [false, true]) {
          const start = filled(m * n, rng);
          const got = start.slice();
          gemmHalf({ a, w: half, c: got, m, accumulate });
          const same = start.slice(); // the same rounded weights, summed by the reference
          gemmRef({ a, b: rounded(w, format), c: same, m, n, k, transB: true, accumulate });
          const exact = start.slice(); // the f32 weights
          gemmRef({ a, b: w, c: exact, m, n, k, transB: true, accumulate });
          const mag = magnitudes(a, w, m, n, k);
          let orderErr = 0;
          let roundErr = 0;
          for (let i = 0; i < m * n; i++) {
            const scale = mag[i]! + Math.abs(start[i]!);
            orderErr = Math.max(orderErr, Math.abs(got[i]! - same[i]!) / scale);
            roundErr = Math.max(roundErr, Math.abs(got[i]! - exact[i]!) / mag[i]!);
          }
          // Two f32 summation orders differ by at most ~k ulps of the magnitudes (k <= 300 here).
          expect(orderErr).toBeLessThan(k * 2 ** -23);
          // Each weight is off by at most its roundoff, so the sum by at most roundoff x |a| |w|.
          expect(roundErr).toBeLessThan(ROUNDOFF[format] + k * 2 ** -23);
          expect(roundErr).toBeGreaterThan(0); // the weights really were rounded
        }
      });
    }

    it(`${format}: each row equals the same row multiplied alone`, () => {
      const rng = new Rng(7);
      const n = 50;
      const k = 280;
      const m = 30;
      const a = filled(m * k, rng);
      const half = halfWeight({ weight: filled(n * k, rng, 0.05), n, k, format });
      const batch = new Float32Array(m * n);
      gemmHalf({ a, w: half, c: batch, m });
      for (const i of [0, 13, m - 1]) {
        const alone = new Float32Array(n);
        gemmHalf({ a: a.subarray(i * k, (i + 1) * k), w: half, c: alone, m: 1 });
        expect(Array.from(batch.subarray(i * n, (i + 1) * n))).toEqual(Array.from(alone));
      }
    });
  }

  it('reuses a buffer of the same shape, and refuses buffers too small', () => {
    const rng = new Rng(3);
    const w = filled(6 * 4, rng);
    const first = halfWeight({ weight: w, n: 6, k: 4, format: 'bf16' });
    const again = halfWeight({ weight: w, n: 6, k: 4, format: 'f16', into: first });
    expect(again.data).toBe(first.data);
    expect(again.format).toBe('f16');
    expect(() => halfWeight({ weight: w, n: 7, k: 4, format: 'bf16' })).toThrow(/\[7, 4\] needs 28/);
    expect(() => gemmHalf({ a: new Float32Array(7), w: first, c: new Float32Array(12), m: 2 })).toThrow(/a has 7/);
    expect(() => gemmHalf({ a: new Float32Array(8), w: first, c: new Float32Array(11), m: 2 })).toThrow(/c has 11/);
  });
});
