/**
 * LoRA's two pure functions over one adapted matrix. Legend: O = output features, I = input
 * features, r = rank, s = alpha / r.
 *   forward (merged):  W = W0 + s B A
 *   backward:          dA = s B^T dW,  dB = s dW A^T
 * The network runs on the merged W, so its backward already yields dW = dLoss/dW, and the chain
 * rule through W = W0 + s B A gives the adapters' gradients exactly (docs/lora.md).
 */
import { gemm } from '../../tensor/gemm.ts';

export interface LoraShape {
  o: number;
  i: number;
  r: number;
  scale: number; // s = alpha / r
}

/**
 * W = W0 + s B A. The product goes through GEMM in f32 into `scratch`; the sum is taken in f64
 * and rounded once, so W is the f32 nearest to W0 + s B A up to the product's own rounding,
 * which is relative to the (small) update, not to W.
 */
export function loraMerge({
  w,
  base,
  a,
  b,
  scratch,
  shape: { o, i, r, scale },
}: {
  w: Float32Array; // [O, I] written
  base: Float32Array; // [O, I] W0
  a: Float32Array; // [r, I]
  b: Float32Array; // [O, r]
  scratch: Float32Array; // [>= O I]
  shape: LoraShape;
}): void {
  gemm({ a: b, b: a, c: scratch, m: o, n: i, k: r, alpha: scale });
  const size = o * i;
  for (let k = 0; k < size; k++) w[k] = base[k]! + scratch[k]!;
}

/** dA += s B^T dW and dB += s dW A^T (gradients accumulate, like every backward here). */
export function loraBackward({
  dw,
  a,
  b,
  da,
  db,
  shape: { o, i, r, scale },
}: {
  dw: Float32Array; // [O, I] dLoss/dW
  a: Float32Array; // [r, I]
  b: Float32Array; // [O, r]
  da: Float32Array; // [r, I]
  db: Float32Array; // [O, r]
  shape: LoraShape;
}): void {
  gemm({ a: b, b: dw, c: da, m: r, n: i, k: o, transA: true, alpha: scale, accumulate: true });
  gemm({ a: dw, b: a, c: db, m: o, n: r, k: i, transB: true, alpha: scale, accumulate: true });
}
