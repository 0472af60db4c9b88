import { gemm } from './gemm.ts';
import { nativeOps } from './native-ops.ts';
import { causalSoftmaxBackward, causalSoftmaxForward } from './softmax.ts';

/**
 * Causal multi-head self-attention over packed ragged sequences: each sequence attends only to
 * itself, so per-token outputs never depend on what else is in the batch.
 * N = packed rows, C = channels = H * D, H = heads, D = head dim, S = sequences, L = one
 * sequence's length. q, k, v live in one [N, 3C] buffer (q_proj | k_proj | v_proj rows, RoPE
 * already applied to q and k). Every product goes through gemm() with strided head batches.
 * With the addon loaded, attentionForward/Backward run native/src/attention.cc instead: the same
 * blocked products in the same order (so the same results), one call for the whole batch with
 * (sequence, head) pairs spread over the threads; the *Ts bodies stay as fallback and oracle.
 */
/** Query rows per causal block (see attentionForward). */
const QUERY_BLOCK = 64;

export interface AttentionLayout {
  starts: Int32Array; // [S] first row of each sequence
  lengths: Int32Array; // [S]
  probStarts: Float64Array; // [S] offset of each sequence's [H, L, L] block in probs
  probSize: number; // sum over sequences of H * L^2
  maxLen: number;
}

export function attentionLayout({ lengths, nHeads }: { lengths: ArrayLike<number>; nHeads: number }): AttentionLayout {
  const s = lengths.length;
  const starts = new Int32Array(s);
  const lens = new Int32Array(s);
  const probStarts = new Float64Array(s);
  let row = 0;
  let p = 0;
  let maxLen = 0;
  for (let i = 0; i < s; i++) {
    const l = lengths[i]!;
    starts[i] = row;
    lens[i] = l;
    probStarts[i] = p;
    row += l;
    p += nHeads * l * l;
    if (l > maxLen) maxLen = l;
  }
  return { starts, lengths: lens, probStarts, probSize: p, maxLen };
}

export interface AttentionForwardArgs {
  out: Float32Array; // [N, C]
  probs: Float32Array; // [probSize] saved for backward
  qkv: Float32Array; // [N, 3C]
  layout: AttentionLayout;
  nHeads: number;
  headDim: number;
}

/** Native fused kernel when the addon has it (one call, (sequence, head) pairs on both cores). */
export function attentionForward(a: AttentionForwardArgs): void {
  if (nativeOps?.attentionForward) return nativeOps.attentionForward(a);
  attentionForwardTs(a);
}

/** The TypeScript body: fallback and the native kernel's oracle (same products, same order). */
export function attentionForwardTs({ out, probs, qkv, layout, nHeads, headDim }: AttentionForwardArgs): void {
  const c = nHeads * headDim;
  const scale = 1 / Math.sqrt(headDim);
  for (let s = 0; s < layout.starts.length; s++) {
    const row = layout.starts[s]!;
    const l = layout.lengths[s]!;
    const po = layout.probStarts[s]!;
    if (l === 0) continue;
    // Causal blocking: query rows [r0, r1) only need keys [0, r1), so the products skip most of
    // the masked upper triangle (62.5% of the square is computed at L = 256 instead of 100%).
    for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
      const r1 = Math.min(l, r0 + QUERY_BLOCK);
      // scores[h, r0:r1, 0:r1] = scale * Q_h[r0:r1] @ K_h[0:r1]^T
      gemm({
        a: qkv,
        b: qkv,
        c: probs,
        m: r1 - r0,
        n: r1,
        k: headDim,
        transB: true,
        alpha: scale,
        lda: 3 * c,
        ldb: 3 * c,
        ldc: l,
        offA: (row + r0) * 3 * c,
        offB: row * 3 * c + c,
        offC: po + r0 * l,
        batch: nHeads,
        strideA: headDim,
        strideB: headDim,
        strideC: l * l,
      });
    }
    causalSoftmaxForward({ x: probs, offset: po, blocks: nHeads, l });
    for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
      const r1 = Math.min(l, r0 + QUERY_BLOCK);
      // out_h[r0:r1] = P_h[r0:r1, 0:r1] @ V_h[0:r1], written into the head's columns of out
      gemm({
        a: probs,
        b: qkv,
        c: out,
        m: r1 - r0,
        n: headDim,
        k: r1,
        lda: l,
        ldb: 3 * c,
        ldc: c,
        offA: po + r0 * l,
        offB: row * 3 * c + 2 * c,
        offC: (row + r0) * c,
        batch: nHeads,
        strideA: l * l,
        strideB: headDim,
        strideC: headDim,
      });
    }
  }
}

export interface AttentionBackwardArgs {
  dqkv: Float32Array; // [N, 3C] accumulated
  dout: Float32Array; // [N, C]
  qkv: Float32Array; // [N, 3C]
  probs: Float32Array; // [probSize]
  scratch: Float32Array; // [H, maxLen, maxLen]
  layout: AttentionLayout;
  nHeads: number;
  headDim: number;
}

export function attentionBackward(a: AttentionBackwardArgs): void {
  if (nativeOps?.attentionBackward) return nativeOps.attentionBackward(a);
  attentionBackwardTs(a);
}

export function attentionBackwardTs(a: AttentionBackwardArgs): void {
  const { dqkv, dout, qkv, probs, scratch, layout, nHeads, headDim } = a;
  const c = nHeads * headDim;
  const scale = 1 / Math.sqrt(headDim);
  for (let s = 0; s < layout.starts.length; s++) {
    const row = layout.starts[s]!;
    const l = layout.lengths[s]!;
    const po = layout.probStarts[s]!;
    if (l === 0) continue;
    const q0 = row * 3 * c;
    for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
      const r1 = Math.min(l, r0 + QUERY_BLOCK);
      // dP_h[r0:r1, 0:r1] = dO_h[r0:r1] @ V_h[0:r1]^T -> scratch [H, L, L]
      gemm({
        a: dout,
        b: qkv,
        c: scratch,
        m: r1 - r0,
        n: r1,
        k: headDim,
        transB: true,
        lda: c,
        ldb: 3 * c,
        ldc: l,
        offA: (row + r0) * c,
        offB: q0 + 2 * c,
        offC: r0 * l,
        batch: nHeads,
        strideA: headDim,
        strideB: headDim,
        strideC: l * l,
      });
      // dV_h[0:r1] += P_h[r0:r1, 0:r1]^T @ dO_h[r0:r1]
      gemm({
        a: probs,
        b: dout,
        c: dqkv,
        m: r1,
        n: headDim,
        k: r1 - r0,
        transA: true,
        accumulate: true,
        lda: l,
        ldb: c,
        ldc: 3 * c,
        offA: po + r0 * l,
        offB: (row + r0) * c,
        offC: q0 + 2 * c,
        batch: nHeads,
        strideA: l * l,
        strideB: headDim,
        strideC: headDim,
      });
    }
    causalSoftmaxBackward({ grad: scratch, gradOffset: 0, probs, probsOffset: po, blocks: nHeads, l });
    for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
      const r1 = Math.min(l, r0 + QUERY_BLOCK);
      // dQ_h[r0:r1] += scale * dS_h[r0:r1, 0:r1] @ K_h[0:r1]
      gemm({
        a: scratch,
        b: qkv,
        c: dqkv,
        m: r1 - r0,
        n: headDim,
        k: r1,
        accumulate: true,
        alpha: scale,
        lda: l,
        ldb: 3 * c,
        ldc: 3 * c,
        offA: r0 * l,
        offB: q0 + c,
        offC: q0 + r0 * 3 * c,
        batch: nHeads,
        strideA: l * l,
        strideB: headDim,
        strideC: headDim,
      });
      // dK_h[0:r1] += scale * dS_h[r0:r1, 0:r1]^T @ Q_h[r0:r1]
      gemm({
        a: scratch,
        b: qkv,
        c: dqkv,
        m: r1,
        n: headDim,
        k: r1 - r0,
        transA: true,
        accumulate: true,
        alpha: scale,
        lda: l,
        ldb: 3 * c,
        ldc: 3 * c,
        offA: r0 * l,
        offB: q0 + r0 * 3 * c,
        offC: q0 + c,
        batch: nHeads,
        strideA: l * l,
        strideB: headDim,
        strideC: headDim,
      });
    }
  }
}
