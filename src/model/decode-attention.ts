/**
 * The decode step's attention: one new query per sequence against its KV cache.
 * A = sequences advancing this step, B = cache slots, S = cache length, H = heads, D = head dim,
 * C = H * D. Caches are head-major [B, H, S, D].
 *
 * Two paths, same results to float rounding:
 *  - native addon loaded: its fused whole-step kernel (src/tensor/native-ops.ts decodeAttentionStep:
 *    cache writes, then rows in parallel with SIMD dot products and exp, no packing);
 *  - otherwise: (slot, head) pairs of consecutive slots sit at a uniform stride S * D, so each run
 *    of consecutive slots is ONE slot-and-head-batched gemm() for the scores and one for the
 *    weighted values, instead of two calls per sequence; rows shorter than the run's longest are
 *    masked in the softmax.
 * Both are memory-bound at batch 64 (every step reads the whole live cache).
 */
import { gemm } from '../tensor/gemm.ts';
import { nativeOps, type DecodeStepArgs } from '../tensor/native-ops.ts';

/** Copies one row's post-RoPE k and v (the row is [q (C) | k (C) | v (C)]) into the caches at (slot, pos). */
export function writeKv({
  kc,
  vc,
  row,
  rowOffset,
  slot,
  pos,
  s,
  h,
  d,
}: {
  kc: Float32Array;
  vc: Float32Array;
  row: Float32Array;
  rowOffset: number;
  slot: number;
  pos: number;
  s: number;
  h: number;
  d: number;
}): void {
  const c = h * d;
  for (let hh = 0; hh < h; hh++) {
    const dst = ((slot * h + hh) * s + pos) * d;
    const src = rowOffset + c + hh * d;
    // Plain loops: subarray() views would allocate on every token of every layer.
    for (let e = 0; e < d; e++) {
      kc[dst + e] = row[src + e]!;
      vc[dst + e] = row[src + c + e]!;
    }
  }
}

/** The native step's arguments plus the TypeScript path's scratch buffers. */
export interface DecodeAttentionArgs extends DecodeStepArgs {
  qbuf: Float32Array; // [B, C] scratch, indexed by slot
  scores: Float32Array; // [B, H, S] scratch
  obuf: Float32Array; // [B, C] scratch
}

/** Writes this step's k, v into the caches, then out[i] = attention of query i over its slot. */
export function decodeAttention(a: DecodeAttentionArgs): void {
  // One native call per layer (cache writes + every row, rows on both cores) instead of one per
  // slot: at batch 64 the per-slot calls ran on one core (bench:engine, decode-attention 65%).
  if (nativeOps) return nativeOps.decodeAttentionStep(a);
  decodeAttentionTs(a);
}

/** The TypeScript path: fallback and the native step's oracle. */
export function decodeAttentionTs(a: DecodeAttentionArgs): void {
  const { qkv, slotIds, positions, count, kc, vc, s, h, d } = a;
  const c = h * d;
  for (let i = 0; i < count; i++)
    writeKv({ kc, vc, row: qkv, rowOffset: i * 3 * c, slot: slotIds[i]!, pos: positions[i]!, s, h, d });
  decodeAttentionBatched(a, 1 / Math.sqrt(d));
}

function decodeAttentionBatched(a: DecodeAttentionArgs, scale: number): void {
  const { qkv, slotIds, positions, count, kc, vc, s, h, d, qbuf, scores, obuf, out } = a;
  const c = h * d;
  for (let i = 0; i < count; i++) {
    const src = i * 3 * c;
    const dst = slotIds[i]! * c;
    for (let e = 0; e < c; e++) qbuf[dst + e] = qkv[src + e]!;
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
      a: qbuf,
      b: kc,
      c: scores,
      m: 1,
      n: maxLen,
      k: d,
      transB: true,
      alpha: scale,
      lda: d,
      ldb: d,
      ldc: s,
      offA: first * c,
      offB: first * h * s * d,
      offC: first * h * s,
      batch,
      strideA: d,
      strideB: s * d,
      strideC: s,
    });
    for (let i = a0; i < a1; i++) {
      const len = positions[i]! + 1;
      for (let hh = 0; hh < h; hh++) maskedSoftmaxRow(scores, (slotIds[i]! * h + hh) * s, len, maxLen);
    }
    // obuf[slot, h] = p[slot, h, 0:maxLen] @ V[slot, h, 0:maxLen]
    gemm({
      a: scores,
      b: vc,
      c: obuf,
      m: 1,
      n: d,
      k: maxLen,
      lda: s,
      ldb: d,
      ldc: d,
      offA: first * h * s,
      offB: first * h * s * d,
      offC: first * c,
      batch,
      strideA: s,
      strideB: s * d,
      strideC: d,
    });
    a0 = a1;
  }
  for (let i = 0; i < count; i++) {
    const src = slotIds[i]! * c;
    const dst = i * c;
    for (let e = 0; e < c; e++) out[dst + e] = obuf[src + e]!;
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

export interface ExtendAttentionArgs {
  qkv: Float32Array; // [U, 3C] rows at rowOffset: the slot's new tokens, post-RoPE, k/v already cached
  row0: number; // first row of this slot's new tokens in qkv / out
  u: number; // U new tokens
  prefix: number; // P tokens cached before them
  slot: number;
  kc: Float32Array; // [B, H, S, D]
  vc: Float32Array; // [B, H, S, D]
  s: number;
  h: number;
  d: number;
  scratch: Float32Array; // [H, U, P + U]
  out: Float32Array; // [.., C] rows row0 .. row0 + U
}

/**
 * Several new queries of one slot against its cache (prefix reuse, kv-decoder.ts): query t sits at
 * absolute position P + t and sees keys 0 .. P + t.
 */
export function extendAttention(a: ExtendAttentionArgs): void {
  const { qkv, row0, u, prefix, slot, kc, vc, s, h, d, scratch, out } = a;
  const c = h * d;
  const width = prefix + u;
  const base = slot * h * s * d;
  // scores[h, t, 0:width] = scale * Q_h[t] @ K_h[0:width]^T
  gemm({
    a: qkv,
    b: kc,
    c: scratch,
    m: u,
    n: width,
    k: d,
    transB: true,
    alpha: 1 / Math.sqrt(d),
    lda: 3 * c,
    ldb: d,
    ldc: width,
    offA: row0 * 3 * c,
    offB: base,
    batch: h,
    strideA: d,
    strideB: s * d,
    strideC: u * width,
  });
  for (let hh = 0; hh < h; hh++) {
    for (let t = 0; t < u; t++) maskedSoftmaxRow(scratch, (hh * u + t) * width, prefix + t + 1, width);
  }
  // out_h[t] = p_h[t] @ V_h[0:width]
  gemm({
    a: scratch,
    b: vc,
    c: out,
    m: u,
    n: d,
    k: width,
    lda: width,
    ldb: d,
    ldc: c,
    offB: base,
    offC: row0 * c,
    batch: h,
    strideA: u * width,
    strideB: s * d,
    strideC: d,
  });
}
