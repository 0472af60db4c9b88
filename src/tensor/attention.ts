import { gemm } from './gemm.ts';
import { nativeOps } from './native-ops.ts';
import { causalSoftmaxBackward, causalSoftmaxForward } from './softmax.ts';
import type { AttentionLayout, AttentionForwardArgs, AttentionBackwardArgs } from './op-args.ts';

/**
 * Causal multi-head self-attention over packed ragged sequences: each sequence attends only to
 * itself, so per-token outputs never depend on what else is in the batch.
 * N = packed rows, H = query heads, Hkv = key/value heads (grouped-query attention: H / Hkv query
 * heads share one; Hkv = H is plain multi-head attention), D = head dim, S = sequences, L = one
 * sequence's length. q, k, v live in one [N, (H + 2 Hkv) D] buffer (q_proj | k_proj | v_proj rows,
 * RoPE already applied to q and k). Every product goes through gemm() with strided head batches.
 * With the addon loaded, attentionForward/Backward run native/src/attention.cc instead: the same
 * blocked products in the same order (so the same results), one call for the whole batch with
 * (sequence, head) pairs spread over the threads; the *Ts bodies stay as fallback and oracle.
 */
/** Query rows per causal block (see attentionForward). */
const QUERY_BLOCK = 64;

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

/** Column offsets of one qkv row and the head grouping. G = H / Hkv query heads per kv head. */
function qkvGeometry(a: { nHeads: number; headDim: number; nKvHeads?: number | undefined }) {
  const h = a.nHeads;
  const hkv = a.nKvHeads ?? h;
  const d = a.headDim;
  if (h % hkv !== 0) throw new Error(`attention: nHeads ${h} is not a multiple of nKvHeads ${hkv}`);
  return { h, hkv, d, g: h / hkv, qDim: h * d, kCol: h * d, vCol: (h + hkv) * d, w: (h + 2 * hkv) * d };
}

/** Native fused kernel when the addon has it (one call, (sequence, head) pairs on both cores). */
export function attentionForward(a: AttentionForwardArgs): void {
  if (nativeOps?.attentionForward) return nativeOps.attentionForward(a);
  attentionForwardTs(a);
}

/**
 * The TypeScript body: fallback and the native kernel's oracle (same products, same order).
 * Query heads j G + g (j < Hkv) share kv head j: each product is batched over j for one g.
 */
export function attentionForwardTs(a: AttentionForwardArgs): void {
  const { out, probs, qkv, layout } = a;
  const { hkv, d, g: groups, qDim, kCol, vCol, w } = qkvGeometry(a);
  const scale = 1 / Math.sqrt(d);
  for (let s = 0; s < layout.starts.length; s++) {
    const row = layout.starts[s]!;
    const l = layout.lengths[s]!;
    const po = layout.probStarts[s]!;
    if (l === 0) continue;
    for (let g = 0; g < groups; g++) {
      // Causal blocking: query rows [r0, r1) only need keys [0, r1), so the products skip most of
      // the masked upper triangle (62.5% of the square is computed at L = 256 instead of 100%).
      for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
        const r1 = Math.min(l, r0 + QUERY_BLOCK);
        // scores[h, r0:r1, 0:r1] = scale * Q_h[r0:r1] @ K_j[0:r1]^T, h = j G + g
        gemm({
          a: qkv,
          b: qkv,
          c: probs,
          m: r1 - r0,
          n: r1,
          k: d,
          transB: true,
          alpha: scale,
          lda: w,
          ldb: w,
          ldc: l,
          offA: (row + r0) * w + g * d,
          offB: row * w + kCol,
          offC: po + g * l * l + r0 * l,
          batch: hkv,
          strideA: groups * d,
          strideB: d,
          strideC: groups * l * l,
        });
      }
    }
    causalSoftmaxForward({ x: probs, offset: po, blocks: hkv * groups, l });
    for (let g = 0; g < groups; g++) {
      for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
        const r1 = Math.min(l, r0 + QUERY_BLOCK);
        // out_h[r0:r1] = P_h[r0:r1, 0:r1] @ V_j[0:r1], written into head h's columns of out
        gemm({
          a: probs,
          b: qkv,
          c: out,
          m: r1 - r0,
          n: d,
          k: r1,
          lda: l,
          ldb: w,
          ldc: qDim,
          offA: po + g * l * l + r0 * l,
          offB: row * w + vCol,
          offC: (row + r0) * qDim + g * d,
          batch: hkv,
          strideA: groups * l * l,
          strideB: d,
          strideC: groups * d,
        });
      }
    }
  }
}

export function attentionBackward(a: AttentionBackwardArgs): void {
  if (nativeOps?.attentionBackward) return nativeOps.attentionBackward(a);
  attentionBackwardTs(a);
}

/**
 * Group g of every kv head at a time (all of its products, then the next g), so each dK / dV
 * element accumulates in the native kernel's order (one task per (sequence, kv head), g inside).
 */
export function attentionBackwardTs(a: AttentionBackwardArgs): void {
  const { dqkv, dout, qkv, probs, scratch, layout } = a;
  const { hkv, d, g: groups, qDim, kCol, vCol, w } = qkvGeometry(a);
  const scale = 1 / Math.sqrt(d);
  for (let s = 0; s < layout.starts.length; s++) {
    const row = layout.starts[s]!;
    const l = layout.lengths[s]!;
    const po = layout.probStarts[s]!;
    if (l === 0) continue;
    const q0 = row * w;
    for (let g = 0; g < groups; g++) {
      for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
        const r1 = Math.min(l, r0 + QUERY_BLOCK);
        // dP_h[r0:r1, 0:r1] = dO_h[r0:r1] @ V_j[0:r1]^T -> scratch [H, L, L]
        gemm({
          a: dout,
          b: qkv,
          c: scratch,
          m: r1 - r0,
          n: r1,
          k: d,
          transB: true,
          lda: qDim,
          ldb: w,
          ldc: l,
          offA: (row + r0) * qDim + g * d,
          offB: q0 + vCol,
          offC: g * l * l + r0 * l,
          batch: hkv,
          strideA: groups * d,
          strideB: d,
          strideC: groups * l * l,
        });
        // dV_j[0:r1] += P_h[r0:r1, 0:r1]^T @ dO_h[r0:r1]
        gemm({
          a: probs,
          b: dout,
          c: dqkv,
          m: r1,
          n: d,
          k: r1 - r0,
          transA: true,
          accumulate: true,
          lda: l,
          ldb: qDim,
          ldc: w,
          offA: po + g * l * l + r0 * l,
          offB: (row + r0) * qDim + g * d,
          offC: q0 + vCol,
          batch: hkv,
          strideA: groups * l * l,
          strideB: groups * d,
          strideC: d,
        });
      }
      if (groups === 1) {
        causalSoftmaxBackward({ grad: scratch, gradOffset: 0, probs, probsOffset: po, blocks: hkv, l });
      } else {
        for (let j = 0; j < hkv; j++) {
          const hh = j * groups + g;
          causalSoftmaxBackward({
            grad: scratch,
            gradOffset: hh * l * l,
            probs,
            probsOffset: po + hh * l * l,
            blocks: 1,
            l,
          });
        }
      }
      for (let r0 = 0; r0 < l; r0 += QUERY_BLOCK) {
        const r1 = Math.min(l, r0 + QUERY_BLOCK);
        // dQ_h[r0:r1] += scale * dS_h[r0:r1, 0:r1] @ K_j[0:r1]
        gemm({
          a: scratch,
          b: qkv,
          c: dqkv,
          m: r1 - r0,
          n: d,
          k: r1,
          accumulate: true,
          alpha: scale,
          lda: l,
          ldb: w,
          ldc: w,
          offA: g * l * l + r0 * l,
          offB: q0 + kCol,
          offC: q0 + r0 * w + g * d,
          batch: hkv,
          strideA: groups * l * l,
          strideB: d,
          strideC: groups * d,
        });
        // dK_j[0:r1] += scale * dS_h[r0:r1, 0:r1]^T @ Q_h[r0:r1]
        gemm({
          a: scratch,
          b: qkv,
          c: dqkv,
          m: r1,
          n: d,
          k: r1 - r0,
          transA: true,
          accumulate: true,
          alpha: scale,
          lda: l,
          ldb: w,
          ldc: w,
          offA: g * l * l + r0 * l,
          offB: q0 + r0 * w + g * d,
          offC: q0 + kCol,
          batch: hkv,
          strideA: groups * l * l,
          strideB: groups * d,
          strideC: d,
        });
      }
    }
  }
}
