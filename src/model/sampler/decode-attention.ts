/**
 * The decode step's attention: one new query per sequence against its KV cache.
 * A = sequences advancing this step, B = cache slots, S = cache length, H = query heads,
 * Hkv = key/value heads (G = H / Hkv query heads share one: grouped-query attention), D = head dim,
 * W = (H + 2 Hkv) D, the width of a q | k | v row. Caches are head-major [B, Hkv, S, D].
 *
 * Two paths, same results to float rounding:
 *  - native addon loaded: its fused whole-step kernel (src/tensor/native-ops.ts decodeAttentionStep:
 *    cache writes, then rows in parallel with SIMD dot products and exp, no packing);
 *  - otherwise: (slot, kv head) pairs of consecutive slots sit at a uniform stride S * D, so each
 *    run of consecutive slots is ONE batched gemm() for the scores and one for the weighted values,
 *    instead of two calls per sequence; the G query heads of a kv head are the G rows of its
 *    product (grouped: the keys are read once for the group); rows shorter than the run's longest
 *    are masked in the softmax.
 * Both are memory-bound at batch 64 (every step reads the whole live cache).
 */
import { gemm } from '../../tensor/gemm.ts';
import { nativeOps, type DecodeStepArgs } from '../../tensor/native-ops.ts';

/** Copies one row's post-RoPE k and v (the row is [q (H D) | k (Hkv D) | v (Hkv D)]) into the caches at (slot, pos). */
export function writeKv({
  kc,
  vc,
  row,
  rowOffset,
  slot,
  pos,
  s,
  h,
  hkv,
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
  hkv: number;
  d: number;
}): void {
  for (let j = 0; j < hkv; j++) {
    const dst = ((slot * hkv + j) * s + pos) * d;
    const src = rowOffset + (h + j) * d;
    const vsrc = src + hkv * d;
    // Plain loops: subarray() views would allocate on every token of every layer.
    for (let e = 0; e < d; e++) {
      kc[dst + e] = row[src + e]!;
      vc[dst + e] = row[vsrc + e]!;
    }
  }
}

/** The native step's arguments plus the TypeScript path's scratch buffers. */
export interface DecodeAttentionArgs extends DecodeStepArgs {
  qbuf: Float32Array; // [B, H D] scratch, indexed by slot
  scores: Float32Array; // [B, H, S] scratch
  obuf: Float32Array; // [B, H D] scratch
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
  const { qkv, slotIds, positions, count, kc, vc, s, h, hkv, d } = a;
  const w = (h + 2 * hkv) * d;
  for (let i = 0; i < count; i++)
    writeKv({ kc, vc, row: qkv, rowOffset: i * w, slot: slotIds[i]!, pos: positions[i]!, s, h, hkv, d });
  decodeAttentionBatched(a, 1 / Math.sqrt(d));
}

function decodeAttentionBatched(a: DecodeAttentionArgs, scale: number): void {
  const { qkv, slotIds, positions, count, kc, vc, s, h, hkv, d, qbuf, scores, obuf, out } = a;
  const c = h * d;
  const w = (h + 2 * hkv) * d;
  const g = h / hkv;
  for (let i = 0; i < count; i++) {
    const src = i * w;
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
    const batch = (a1 - a0) * hkv;
    // scores[slot, j G : j G + G, 0:maxLen] = scale * q[slot, heads of kv head j] @ K[slot, j, 0:maxLen]^T
    gemm({
      a: qbuf,
      b: kc,
      c: scores,
      m: g,
      n: maxLen,
      k: d,
      transB: true,
      alpha: scale,
      lda: d,
      ldb: d,
      ldc: s,
      offA: first * c,
      offB: first * hkv * s * d,
      offC: first * h * s,
      batch,
      strideA: g * d,
      strideB: s * d,
      strideC: g * s,
    });
    for (let i = a0; i < a1; i++) {
      const len = positions[i]! + 1;
      for (let hh = 0; hh < h; hh++) maskedSoftmaxRow(scores, (slotIds[i]! * h + hh) * s, len, maxLen);
    }
    // obuf[slot, heads of kv head j] = p[slot, those heads, 0:maxLen] @ V[slot, j, 0:maxLen]
    gemm({
      a: scores,
      b: vc,
      c: obuf,
      m: g,
      n: d,
      k: maxLen,
      lda: s,
      ldb: d,
      ldc: d,
      offA: first * h * s,
      offB: first * hkv * s * d,
      offC: first * c,
      batch,
      strideA: g * s,
      strideB: s * d,
      strideC: g * d,
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
  qkv: Float32Array; // [U, W] rows at row0: the slot's new tokens, post-RoPE, k/v already cached
  row0: number; // first row of this slot's new tokens in qkv / out
  u: number; // U new tokens
  prefix: number; // P tokens cached before them
  slot: number;
  kc: Float32Array; // [B, Hkv, S, D]
  vc: Float32Array; // [B, Hkv, S, D]
  s: number;
  h: number;
  hkv: number;
  d: number;
  scratch: Float32Array; // [H, U, P + U]
  out: Float32Array; // [.., H D] rows row0 .. row0 + U
}

/**
 * Several new queries of one slot against its cache (prefix reuse, kv-decoder.ts): query t sits at
 * absolute position P + t and sees keys 0 .. P + t.
 */
export function extendAttention(a: ExtendAttentionArgs): void {
  const { qkv, row0, u, prefix, slot, kc, vc, s, h, hkv, d, scratch, out } = a;
  const c = h * d;
  const w = (h + 2 * hkv) * d;
  const groups = h / hkv;
  const width = prefix + u;
  const base = slot * hkv * s * d;
  // Query head j G + g reads kv head j: one product per g, batched over j.
  for (let g = 0; g < groups; g++) {
    // scores[h, t, 0:width] = scale * Q_h[t] @ K_j[0:width]^T
    gemm({
      a: qkv,
      b: kc,
      c: scratch,
      m: u,
      n: width,
      k: d,
      transB: true,
      alpha: 1 / Math.sqrt(d),
      lda: w,
      ldb: d,
      ldc: width,
      offA: row0 * w + g * d,
      offB: base,
      offC: g * u * width,
      batch: hkv,
      strideA: groups * d,
      strideB: s * d,
      strideC: groups * u * width,
    });
  }
  for (let hh = 0; hh < h; hh++) {
    for (let t = 0; t < u; t++) maskedSoftmaxRow(scratch, (hh * u + t) * width, prefix + t + 1, width);
  }
  for (let g = 0; g < groups; g++) {
    // out_h[t] = p_h[t] @ V_j[0:width]
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
      offA: g * u * width,
      offB: base,
      offC: row0 * c + g * d,
      batch: hkv,
      strideA: groups * u * width,
      strideB: s * d,
      strideC: groups * d,
    });
  }
}
