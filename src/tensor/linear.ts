import { gemm } from './gemm.ts';
import { gemmHalf, type HalfWeight } from './half-weight.ts';
import type { PackedWeight } from './packed-weight.ts';

/** A weight prepared once for inference: f32 packed for the native GEMM, or 16-bit. */
export type PreparedWeight = PackedWeight | HalfWeight;

/**
 * Bias-free linear layer with Hugging Face weight layout [out, in]: out = inp @ W^T.
 * N = rows, I = in features, O = out features. Backward ADDS into dinp and dweight.
 * Both directions are single GEMM calls so the native kernel carries the FLOPs.
 */
export interface LinearForwardArgs {
  out: Float32Array; // [N, O]
  inp: Float32Array; // [N, I]
  weight: Float32Array; // [O, I]
  n: number;
  inF: number;
  outF: number;
  /** Add into out (residual connection) instead of overwriting it. */
  accumulate?: boolean;
  /**
   * The weight prepared once: f32 packed (packed-weight.ts; the same result without per-call
   * packing), or 16-bit (half-weight.ts; `weight` is then not read).
   */
  packed?: PreparedWeight | null | undefined;
}

export function linearForward({ out, inp, weight, n, inF, outF, accumulate = false, packed }: LinearForwardArgs): void {
  if (packed && 'format' in packed) {
    if (packed.n !== outF || packed.k !== inF)
      throw new Error(`linearForward: the half weight is [${packed.n}, ${packed.k}], the layer [${outF}, ${inF}]`);
    gemmHalf({ a: inp, w: packed, c: out, m: n, accumulate });
    return;
  }
  gemm({ a: inp, b: weight, c: out, m: n, n: outF, k: inF, transB: true, accumulate, packedB: packed });
}

export interface LinearBackwardArgs {
  dinp: Float32Array | null; // [N, I] accumulated; null when the input needs no gradient
  dweight: Float32Array | null; // [O, I] accumulated; null when the weight is frozen (LoRA: model/lora/)
  dout: Float32Array; // [N, O]
  inp: Float32Array; // [N, I]
  weight: Float32Array; // [O, I]
  n: number;
  inF: number;
  outF: number;
}

export function linearBackward({ dinp, dweight, dout, inp, weight, n, inF, outF }: LinearBackwardArgs): void {
  if (dinp) gemm({ a: dout, b: weight, c: dinp, m: n, n: inF, k: outF, accumulate: true });
  if (dweight) gemm({ a: dout, b: inp, c: dweight, m: outF, n: inF, k: n, transA: true, accumulate: true });
}
