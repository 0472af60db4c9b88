/**
 * Native twins of the non-GEMM ops, with the same signatures as their TypeScript originals
 * (swiglu.ts, softmax.ts, rmsnorm.ts, rope.ts, attention.ts, and decodeAttention in src/model/sampler/decode-attention.ts). `nativeOps` is null when the addon is unavailable, so an op's
 * dispatch is one line at the top of its TypeScript function:
 *
 *   if (nativeOps) return nativeOps.swigluForward(args);
 *
 * Why native: after GEMM moved to C++, bench:engine's per-kernel breakdown put SwiGLU and the
 * attention softmax (both exp-bound) at ~60% of a training step, and the decode step's attention
 * at ~70% of sampling; the C++ versions vectorize exp and the dot products. The fused causal
 * attention (attention.ts) and the whole decode step (decode-attention.ts) followed: one call per
 * layer instead of one per sequence / slot, parallel over (sequence, head) pairs / rows.
 */
import { nativeAddon, type NativeAddon } from './native.ts';
import type { AttentionBackwardArgs } from './op-args.ts';
import type { AttentionForwardArgs } from './op-args.ts';
import type { LogprobForwardArgs } from './op-args.ts';
import type { RmsnormBackwardArgs } from './op-args.ts';
import type { RmsnormForwardArgs } from './op-args.ts';
import type { RopeArgs } from './op-args.ts';
import type { CausalSoftmaxBackwardArgs } from './op-args.ts';
import type { CausalSoftmaxArgs } from './op-args.ts';
import type { SwigluBackwardArgs } from './op-args.ts';
import type { SwigluForwardArgs } from './op-args.ts';

/** Arguments of src/model/sampler/decode-attention.ts's decodeAttention (the whole decode step). */
export interface DecodeStepArgs {
  qkv: Float32Array; // [A, (H + 2 Hkv) D] this step's post-RoPE rows
  slotIds: Int32Array; // [A] distinct slots
  positions: Int32Array; // [A] position of each new token
  count: number; // A
  kc: Float32Array; // [B, Hkv, S, D]
  vc: Float32Array; // [B, Hkv, S, D]
  s: number;
  h: number; // query heads
  hkv: number; // key/value heads (h / hkv query heads share one)
  d: number;
  out: Float32Array; // [A, H D]
  // Scratch of the TypeScript path (qbuf, scores, obuf) is accepted and ignored.
}

/** Arguments of every request's extendAttention in one kv-extend.ts call (src/model/sampler/decode-attention.ts). */
export interface ExtendStepArgs {
  qkv: Float32Array; // [N, (H + 2 Hkv) D] the new rows of all requests, post-RoPE
  starts: Int32Array; // [R + 1] request i's rows are starts[i] .. starts[i + 1]
  prefixes: Int32Array; // [R] tokens already cached in each request's slot
  slots: Int32Array; // [R] distinct
  r: number; // R
  kc: Float32Array; // [B, Hkv, S, D]
  vc: Float32Array; // [B, Hkv, S, D]
  s: number;
  h: number;
  hkv: number;
  d: number;
  out: Float32Array; // [N, H D]
}

export interface DrawRowsArgs {
  logits: Float32Array; // [N, V]
  n: number;
  v: number;
  u: Float64Array; // [N]
  tokens: Int32Array; // [N] out
  logprobs: Float64Array; // [N] out
  entropies: Float64Array; // [N] out
}

export interface NativeOps {
  swigluForward(a: SwigluForwardArgs): void;
  swigluBackward(a: SwigluBackwardArgs): void;
  causalSoftmaxForward(a: CausalSoftmaxArgs): void;
  causalSoftmaxBackward(a: CausalSoftmaxBackwardArgs): void;
  /**
   * logprob.ts's forward, bit-identical to it (the running Node's own exp and log; rows on both
   * threads). Null when this Node does not export them or they differ from Math.exp / Math.log.
   */
  logprobForward: ((a: LogprobForwardArgs) => void) | null;
  /**
   * src/model/sampler/sampling.ts's drawToken on rows [0, n) at temperature 1 (u[r] in [0, 1), the row's
   * uniform) or 0 (u[r] < 0: the argmax), top-p 1: its formulas with a vectorized exp, log-probs
   * and entropies within 1e-12 of it; rows on both threads. Null when the addon predates it.
   */
  drawRows: ((a: DrawRowsArgs) => void) | null;
  /**
   * Writes every request's new k, v into the caches and attends them against their cached
   * prefixes: decode-attention.ts's writeKv + extendAttention for all requests in one call,
   * (request, head) pairs on both threads, bit-identical to it (same products, the same
   * double-precision softmax with JavaScript's exp). Null when logprobForward is.
   */
  extendAttentionStep: ((a: ExtendStepArgs) => void) | null;
  /** RoPE in place; sign 1 forward, -1 the inverse (the backward). Bit-identical to rope.ts. */
  ropeRotate(a: RopeArgs, sign: number): void;
  rmsnormForward(a: RmsnormForwardArgs): void;
  rmsnormBackward(a: RmsnormBackwardArgs): void;
  /**
   * The whole decode step in one call: writes k, v of every row into the caches, then attention
   * per row, rows in parallel. Same signature as decode-attention.ts's decodeAttention.
   */
  decodeAttentionStep(a: DecodeStepArgs): void;
  /**
   * Fused causal attention, every sequence and head in one call ((sequence, head) pairs in
   * parallel, same products in the same order as attention.ts, so bit-identical to it). Null when
   * the loaded addon predates these kernels. The backward's `scratch` is unused natively.
   */
  attentionForward: ((a: AttentionForwardArgs) => void) | null;
  attentionBackward: ((a: AttentionBackwardArgs) => void) | null;
}

/**
 * Whether the addon's exp / log are JavaScript's: equal bit for bit on a spread of arguments (the
 * reduced range, both tails, subnormal results, special values). Cheap, once per process.
 */
function sameMathAsJs(addon: NativeAddon): boolean {
  const xs: number[] = [0, -0, 1, -1, 0.5, 708, 709.7, -745, -746, 1e-300, 5e-324, Infinity, -Infinity, NaN];
  for (let i = 0; i < 2000; i++) xs.push(Math.sin(i * 12.9898) * (i % 4 === 0 ? 700 : i % 4 === 1 ? 30 : 1));
  const e = Float64Array.from(xs);
  const l = Float64Array.from(xs, (x) => Math.abs(x));
  if (!addon.v8Math(e, false) || !addon.v8Math(l, true)) return false;
  return xs.every((x, i) => Object.is(e[i], Math.exp(x)) && Object.is(l[i], Math.log(Math.abs(x))));
}

function bind(addon: NativeAddon): NativeOps {
  const jsMath = sameMathAsJs(addon);
  return {
    swigluForward: ({ out, sig, inp, n, f }) => addon.swigluForward(out, sig, inp, n, f),
    swigluBackward: ({ dinp, dout, inp, sig, n, f }) => addon.swigluBackward(dinp, dout, inp, sig, n, f),
    causalSoftmaxForward: ({ x, offset, blocks, l }) => addon.causalSoftmaxForward(x, offset, blocks, l),
    causalSoftmaxBackward: ({ grad, gradOffset, probs, probsOffset, blocks, l }) =>
      addon.causalSoftmaxBackward(grad, gradOffset, probs, probsOffset, blocks, l),
    logprobForward: jsMath
      ? ({ probs, targets, logprobs, entropies, n, v }) =>
          addon.logprobForward(probs, targets, logprobs, entropies, n, v)
      : null,
    drawRows: addon.drawRows
      ? ({ logits, n, v, u, tokens, logprobs, entropies }) =>
          addon.drawRows!(logits, n, v, u, tokens, logprobs, entropies)
      : null,
    extendAttentionStep: jsMath
      ? ({ qkv, starts, prefixes, slots, r, kc, vc, s, h, hkv, d, out }) =>
          addon.extendAttention(qkv, starts, prefixes, slots, r, kc, vc, s, h, hkv, d, out)
      : null,
    ropeRotate: ({ x, n, nHeads, rowStride, offset, positions, table }, sign) =>
      addon.ropeRotate(x, offset, n, nHeads, rowStride, positions, table.cos, table.sin, table.half, sign),
    rmsnormForward: ({ out, rstd, inp, weight, n, c, eps }) => addon.rmsnormForward(out, rstd, inp, weight, n, c, eps),
    rmsnormBackward: ({ dinp, dweight, dout, inp, weight, rstd, n, c }) =>
      addon.rmsnormBackward(dinp, dweight, dout, inp, weight, rstd, n, c),
    decodeAttentionStep: ({ qkv, slotIds, positions, count, kc, vc, s, h, hkv, d, out }) =>
      addon.decodeAttentionStep(qkv, slotIds, positions, count, kc, vc, s, h, hkv, d, out),
    attentionForward: addon.attentionForward
      ? ({ out, probs, qkv, layout, nHeads, headDim, nKvHeads }) =>
          addon.attentionForward!(
            out,
            probs,
            qkv,
            layout.starts,
            layout.lengths,
            layout.probStarts,
            layout.starts.length,
            nHeads,
            headDim,
            nKvHeads ?? nHeads,
          )
      : null,
    attentionBackward: addon.attentionBackward
      ? ({ dqkv, dout, qkv, probs, layout, nHeads, headDim, nKvHeads }) =>
          addon.attentionBackward!(
            dqkv,
            dout,
            qkv,
            probs,
            layout.starts,
            layout.lengths,
            layout.probStarts,
            layout.starts.length,
            nHeads,
            headDim,
            nKvHeads ?? nHeads,
          )
      : null,
  };
}

export const nativeOps: NativeOps | null = nativeAddon ? bind(nativeAddon) : null;
