/**
 * A weight W [N, K] (stored [out, in], linear.ts) kept in 16 bits for inference, and x @ W^T
 * with it: each weight widened to f32 as it is read, products accumulated in f32. Batch-1 decode
 * reads every weight once per token, so its speed is bandwidth / bytes per weight; half the bytes,
 * up to twice the tokens (docs/decisions/0044-half-precision-weights.md).
 *
 * With the native addon the values are laid out as packed-weight.ts lays out f32 (the native
 * kernel's panels, native/src/gemm-half.cc); without it, as W itself, row-major, for the
 * TypeScript twin below. Either way each value is W's f32 rounded to nearest, ties to even.
 */
import { gemmRef } from './gemm-ref.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half-float.ts';
import { nativeAddon } from './native.ts';

export const HALF_FORMATS = ['f16', 'bf16'] as const;
export type HalfFormat = (typeof HALF_FORMATS)[number];

export interface HalfWeight {
  format: HalfFormat;
  /** 'panels': native/src/gemm-half.cc's layout; 'rows': W [N, K] row-major (TypeScript twin). */
  layout: 'panels' | 'rows';
  data: Uint16Array; // N x K values in `layout`, plus the native panels' zero padding
  n: number; // N = out features
  k: number; // K = in features
}

interface FormatOps {
  code: number; // native/src/gemm-half.h HalfFormat
  round: (src: Float32Array, out: Uint16Array) => Uint16Array;
  widen: (src: Uint16Array, out: Float32Array) => Float32Array;
}

const FORMATS: Record<HalfFormat, FormatOps> = {
  f16: { code: 0, round: f32ToF16, widen: f16ToF32 },
  bf16: { code: 1, round: f32ToBf16, widen: bf16ToF32 },
};

/** W [N, K] (the first N K floats of `weight`) in `format`, reusing `into` when it has the same shape. */
export function halfWeight(o: {
  weight: Float32Array;
  n: number;
  k: number;
  format: HalfFormat;
  into?: HalfWeight | null | undefined;
}): HalfWeight {
  const { weight, n, k, format } = o;
  if (weight.length < n * k)
    throw new Error(`halfWeight: weight has ${weight.length} floats, [${n}, ${k}] needs ${n * k}`);
  const layout = nativeAddon ? 'panels' : 'rows';
  const size = nativeAddon ? nativeAddon.packedWeightSize(n, k) : n * k;
  const reuse = o.into && o.into.n === n && o.into.k === k && o.into.layout === layout;
  const data = reuse ? o.into!.data : new Uint16Array(size);
  if (nativeAddon) nativeAddon.packHalfWeight(weight, 0, n, k, FORMATS[format].code, data);
  else FORMATS[format].round(weight.subarray(0, n * k), data);
  return { format, layout, data, n, k };
}

// Scalars cross into C++ as one typed array, in GEMM_PARAM_ORDER (native.ts), as gemm.ts does.
const params = new Float64Array(17);

/** c [M, N] = a [M, K] @ W^T (+ c when accumulate), W half; a and c from offset 0. */
export function gemmHalf(o: {
  a: Float32Array;
  w: HalfWeight;
  c: Float32Array;
  m: number;
  accumulate?: boolean;
}): void {
  const { a, w, c, m } = o;
  const { n, k } = w;
  const accumulate = o.accumulate ?? false;
  if (a.length < m * k) throw new Error(`gemmHalf: a has ${a.length} floats, [${m}, ${k}] needs ${m * k}`);
  if (c.length < m * n) throw new Error(`gemmHalf: c has ${c.length} floats, [${m}, ${n}] needs ${m * n}`);
  if (w.layout === 'panels') {
    if (!nativeAddon) throw new Error('gemmHalf: a weight in the native layout needs the native addon');
    params.set([m, n, k, 0, 1, accumulate ? 1 : 0, 1, k, k, n, 0, 0, 0, 1, 0, 0, 0]);
    nativeAddon.gemmHalf(a, w.data, c, params, FORMATS[w.format].code);
    return;
  }
  gemmHalfRef({ a, w, c, m, accumulate });
}

/**
 * The TypeScript twin: W widened a block of rows at a time, then the reference GEMM into C's
 * columns (it adds each product into the f32 output, so it too accumulates in f32).
 */
function gemmHalfRef(o: { a: Float32Array; w: HalfWeight; c: Float32Array; m: number; accumulate: boolean }): void {
  const { a, w, c, m, accumulate } = o;
  const { n, k } = w;
  const rows = Math.max(1, Math.min(n, Math.floor(65536 / Math.max(1, k)))); // ~256 KiB of f32 at a time
  const wide = new Float32Array(rows * k);
  for (let j0 = 0; j0 < n; j0 += rows) {
    const r = Math.min(rows, n - j0);
    FORMATS[w.format].widen(w.data.subarray(j0 * k, (j0 + r) * k), wide);
    gemmRef({ a, b: wide, c, m, n: r, k, transB: true, ldc: n, offC: j0, accumulate });
  }
}
