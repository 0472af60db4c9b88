/**
 * Argument records of the tensor ops that have a native twin (native-ops.ts), apart from the ops
 * themselves so that the ops and their native dispatch both import them without a circle.
 * Legend: N rows, T positions, H query heads, Hkv key/value heads, D head size.
 */
export interface AttentionLayout {
  starts: Int32Array; // [S] first row of each sequence
  lengths: Int32Array; // [S]
  probStarts: Float64Array; // [S] offset of each sequence's [H, L, L] block in probs
  probSize: number; // sum over sequences of H * L^2
  maxLen: number;
}

export interface AttentionForwardArgs {
  out: Float32Array; // [N, H D]
  probs: Float32Array; // [probSize] saved for backward
  qkv: Float32Array; // [N, (H + 2 Hkv) D]: q heads, then k heads, then v heads
  layout: AttentionLayout;
  nHeads: number;
  headDim: number;
  /** Key/value heads (grouped-query attention): query head h reads kv head floor(h / (H / Hkv)). Default nHeads. */
  nKvHeads?: number;
}

export interface AttentionBackwardArgs {
  dqkv: Float32Array; // [N, (H + 2 Hkv) D] accumulated
  dout: Float32Array; // [N, H D]
  qkv: Float32Array; // [N, (H + 2 Hkv) D]
  probs: Float32Array; // [probSize]
  scratch: Float32Array; // [H, maxLen, maxLen]
  layout: AttentionLayout;
  nHeads: number;
  headDim: number;
  nKvHeads?: number;
}

export interface LogprobForwardArgs {
  probs: Float32Array; // [N, V] logits in, probabilities out (in place, kept for backward)
  targets: Int32Array; // [N] target id per row; -1 = no target (logprob 0)
  logprobs: Float32Array; // [N] out
  entropies: Float32Array; // [N] out
  n: number;
  v: number;
}

export interface LogprobBackwardArgs {
  dlogits: Float32Array; // [N, V] accumulated
  probs: Float32Array; // [N, V]
  targets: Int32Array; // [N]
  dlogprobs: Float32Array; // [N]
  dentropies: Float32Array | null; // [N]
  entropies: Float32Array; // [N]
  n: number;
  v: number;
}

export interface RmsnormForwardArgs {
  out: Float32Array; // [N, C]
  rstd: Float32Array; // [N] saved for backward
  inp: Float32Array; // [N, C]
  weight: Float32Array; // [C]
  n: number;
  c: number;
  eps: number;
}

export interface RmsnormBackwardArgs {
  dinp: Float32Array; // [N, C] accumulated
  dweight: Float32Array; // [C] accumulated
  dout: Float32Array; // [N, C]
  inp: Float32Array; // [N, C]
  weight: Float32Array; // [C]
  rstd: Float32Array; // [N]
  n: number;
  c: number;
}

export interface RopeTable {
  cos: Float32Array; // [P, D/2]
  sin: Float32Array; // [P, D/2]
  half: number; // D/2
  maxPositions: number;
}

export interface RopeArgs {
  x: Float32Array; // rows of [H, D] at x[offset + r * rowStride]
  n: number;
  nHeads: number;
  rowStride: number;
  offset: number;
  positions: Int32Array; // [N] absolute position of each row
  table: RopeTable;
}

export interface CausalSoftmaxArgs {
  x: Float32Array; // [R, L, L] at offset, scores in, probabilities out (in place)
  offset: number;
  blocks: number;
  l: number;
}

export interface CausalSoftmaxBackwardArgs {
  grad: Float32Array; // [R, L, L] at gradOffset: dL/dprobs in, dL/dscores out (in place)
  gradOffset: number;
  probs: Float32Array; // [R, L, L] at probsOffset
  probsOffset: number;
  blocks: number;
  l: number;
}

export interface SwigluForwardArgs {
  out: Float32Array; // [N, F]
  sig: Float32Array; // [N, F] sigmoid(gate), saved for backward
  inp: Float32Array; // [N, 2F]
  n: number;
  f: number;
}

export interface SwigluBackwardArgs {
  dinp: Float32Array; // [N, 2F] accumulated
  dout: Float32Array; // [N, F]
  inp: Float32Array; // [N, 2F]
  sig: Float32Array; // [N, F] from the forward
  n: number;
  f: number;
}
