/**
 * The decode step's attention: one new query per sequence against its KV cache.
 * A = sequences advancing this step, B = cache slots, S = cache length, H = heads, D = head dim,
 * C = H * D. The cache is head-major [B, H, S, D], so (slot, head) pairs of consecutive slots sit
 * at a uniform stride S * D: a run of consecutive slots is then ONE head-and-slot-batched gemm()
 * for the scores and one for the weighted values, instead of two calls per sequence (the per-call
 * cost dominated at batch 64). Rows shorter than the run's longest are masked in the softmax.
 */
import { gemm } from '../tensor/gemm.ts';

/** Copies one row's post-RoPE k and v (the row is [q (C) | k (C) | v (C)]) into the cache at (slot, pos). */
export function writeKv({ kc, vc, row, rowOffset, slot, pos, s, h, d }: {
  kc: Float32Array; vc: Float32Array; row: Float32Array; rowOffset: number; slot: number; pos: number; s: number; h: number; d: number;
}): void {
  const c = h * d;
  for (let hh = 0; hh < h; hh++) {
    const dst = ((slot * h + hh) * s + pos) * d;
    const src = rowOffset + c + hh * d;
    kc.set(row.subarray(src, src + d), dst);
    vc.set(row.subarray(src + c, src + c + d), dst);
  }
}

export interface DecodeAttentionArgs {
  qkv: Float32Array; // [A, 3C] this step's post-RoPE rows
  slotIds: Int32Array; // [A]
  positions: Int32Array; // [A] position of each new token
  count: number; // A
  kc: Float32Array; // [B, H, S, D]
  vc: Float32Array; // [B, H, S, D]
  s: number;
  h: number;
  d: number;
  qbuf: Float32Array; // [B, C] scratch, indexed by slot
  scores: Float32Array; // [B, H, S] scratch
  obuf: Float32Array; // [B, C] scratch
  out: Float32Array; // [A, C]
}

export function decodeAttention(a: DecodeAttentionArgs): void {
  const { qkv, slotIds, positions, count, kc, vc, s, h, d, qbuf, scores, obuf, out } = a;
  const c = h * d;
  const scale = 1 / Math.sqrt(d);
  for (let i = 0; i < count; i++) {
    const slot = slotIds[i]!;
    writeKv({ kc, vc, row: qkv, rowOffset: i * 3 * c, slot, pos: positions[i]!, s, h, d });
    qbuf.set(qkv.subarray(i * 3 * c, i * 3 * c + c), slot * c);
  }
  let a0 = 0;
  while (a0 < count) {
    let a1 = a0 + 1;
    while (a1 < count && slotIds[a1] === slotIds[a1 - 1]! + 1) a1++;
    const first = slotIds[a0]!;
    let maxLen = 0;
    for (let i = a0; i < a1; i++) maxLen = Math.max(maxLen, positions[i]! + 1);
    const batch = (a1 - a0) * h;
    // scores[slot, h, 0:maxLen] = scale * q[slot, h] @ K[slot, h, 0:maxLen]^T
    gemm({
      a: qbuf, b: kc, c: scores, m: 1, n: maxLen, k: d, transB: true, alpha: scale,
      lda: d, ldb: d, ldc: s, offA: first * c, offB: first * h * s * d, offC: first * h * s,
      batch, strideA: d, strideB: s * d, strideC: s,
    });
    for (let i = a0; i < a1; i++) {
      const len = positions[i]! + 1;
      for (let hh = 0; hh < h; hh++) maskedSoftmaxRow(scores, (slotIds[i]! * h + hh) * s, len, maxLen);
    }
    // obuf[slot, h] = p[slot, h, 0:maxLen] @ V[slot, h, 0:maxLen]
    gemm({
      a: scores, b: vc, c: obuf, m: 1, n: d, k: maxLen,
      lda: s, ldb: d, ldc: d, offA: first * h * s, offB: first * h * s * d, offC: first * c,
      batch, strideA: s, strideB: s * d, strideC: d,
    });
    a0 = a1;
  }
  for (let i = 0; i < count; i++) {
    const slot = slotIds[i]!;
    out.set(obuf.subarray(slot * c, slot * c + c), i * c);
  }
}

/** Softmax over x[o : o + len], zeros on [len, width): keys past this sequence's end get no weight. */
function maskedSoftmaxRow(x: Float32Array, o: number, len: number, width: number): void {
  let mx = -Infinity;
  for (let j = 0; j < len; j++) if (x[o + j]! > mx) mx = x[o + j]!;
  let sum = 0;
  for (let j = 0; j < len; j++) {
    const e = Math.exp(x[o + j]! - mx);
    x[o + j] = e;
    sum += e;
  }
  const inv = 1 / sum;
  for (let j = 0; j < len; j++) x[o + j] = x[o + j]! * inv;
  for (let j = len; j < width; j++) x[o + j] = 0;
}
