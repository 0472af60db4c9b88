/**
 * LoRA's pure functions over one adapted matrix. Legend: N = rows (tokens), O = output features,
 * I = input features, r = rank, s = alpha / r, X [N, I] the product's input, dY [N, O] its output
 * gradient, so dW = dY^T X.
 *   forward (merged):  W = W0 + s B A
 *   backward:          dA = s B^T dW = s (dY B)^T X,   dB = s dW A^T = s dY^T (X A^T)
 * The network runs on the merged W; the chain rule through W = W0 + s B A gives the adapters'
 * gradients exactly. loraRowsBackward takes the right-hand forms, which never form dW [O, I]
 * (4 N r (O + I) FLOPs instead of 2 N O I); loraBackward, from dW, is their oracle (docs/lora.md).
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

/**
 * W += s B A in place (W holding W0): loraMerge's values without its scratch or its add pass. The
 * GEMM adds its f32 product into each element of W once, the same f32 sum loraMerge rounds, since
 * the r-deep product is one block of the kernel's K loop either way (merged-layers.test.ts checks
 * it against loraMerge bit for bit).
 */
export function loraMergeInPlace({
  w,
  a,
  b,
  shape: { o, i, r, scale },
}: {
  w: Float32Array; // [O, I] W0 in, W0 + s B A out
  a: Float32Array; // [r, I]
  b: Float32Array; // [O, r]
  shape: LoraShape;
}): void {
  gemm({ a: b, b: a, c: w, m: o, n: i, k: r, alpha: scale, accumulate: true });
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

/**
 * dA += s (dY B)^T X and dB += s dY^T (X A^T), from the product's rows. dY is columns
 * [col, col + O) of dout [N, ld] (a fused q/k/v or gate/up product holds several matrices).
 */
export function loraRowsBackward({
  dout,
  ld,
  col,
  inp,
  a,
  b,
  da,
  db,
  t,
  u,
  n,
  shape: { o, i, r, scale },
}: {
  dout: Float32Array; // [N, ld]
  ld: number;
  col: number;
  inp: Float32Array; // [N, I] X
  a: Float32Array; // [r, I]
  b: Float32Array; // [O, r]
  da: Float32Array; // [r, I]
  db: Float32Array; // [O, r]
  t: Float32Array; // [>= N r] scratch: dY B
  u: Float32Array; // [>= N r] scratch: X A^T
  n: number;
  shape: LoraShape;
}): void {
  gemm({ a: dout, b, c: t, m: n, n: r, k: o, lda: ld, offA: col });
  gemm({ a: t, b: inp, c: da, m: r, n: i, k: n, transA: true, alpha: scale, accumulate: true });
  gemm({ a: inp, b: a, c: u, m: n, n: r, k: i, transB: true });
  gemm({ a: dout, b: u, c: db, m: o, n: r, k: n, transA: true, lda: ld, offA: col, alpha: scale, accumulate: true });
}
