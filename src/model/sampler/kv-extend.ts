/**
 * Prefill with prefix reuse: runs each request's new tokens (its prompt minus the prefix already
 * in its KV slot) through the trunk, attending to the cached prefix, and appends their k and v.
 * N = new tokens over all requests, R = requests, C = dModel, H = query heads, Hkv = key/value
 * heads, D = head size, W = (H + 2 Hkv) D.
 * Inference only: one set of row buffers serves every layer (network/llama-block.ts InferenceBuffers), so
 * a long prefill costs a few [N, F] buffers, not a training workspace's per-layer activations.
 */
import { embeddingForward } from '../../tensor/embedding.ts';
import { nativeOps } from '../../tensor/native-ops.ts';
import { rmsnormForward } from '../../tensor/rmsnorm.ts';
import { attentionShape } from '../network/config.ts';
import { extendAttention, writeKv } from './decode-attention.ts';
import type { InferenceWeights } from '../network/inference-weights.ts';
import { blockForward, type InferenceBuffers } from '../network/llama-block.ts';
import type { LlamaNetwork } from '../network/network.ts';

export interface ExtendArgs {
  net: LlamaNetwork;
  /** The matrices in the sampler's precision (null: f32 read in place). */
  weights: InferenceWeights | null;
  bufs: InferenceBuffers;
  kCache: Float32Array[]; // L x [B, Hkv, S, D]
  vCache: Float32Array[]; // L x [B, Hkv, S, D]
  s: number;
  slots: Int32Array; // [R]
  prefixes: Int32Array; // [R] tokens already cached in each slot (kept)
  prompts: readonly ArrayLike<number>[]; // [R] full prompts; tokens from prefixes[i] on are new
  scratch: Float32Array; // [H, max new tokens, S]
  lastHidden: Float32Array; // [R, C] out: final-normed hidden state of each prompt's last token
}

export function extendForward(a: ExtendArgs): void {
  const { net, weights, bufs, kCache, vCache, s, slots, prefixes, prompts, scratch, lastHidden } = a;
  const { dModel: c, normEps: eps } = net.cfg;
  const { h, hkv, d, qkvDim } = attentionShape(net.cfg);
  const r = prompts.length;
  const starts = new Int32Array(r + 1);
  for (let i = 0; i < r; i++) starts[i + 1] = starts[i]! + prompts[i]!.length - prefixes[i]!;
  const n = starts[r]!;
  const tokens = new Int32Array(n);
  const positions = new Int32Array(n);
  for (let i = 0; i < r; i++) {
    for (let t = prefixes[i]!; t < prompts[i]!.length; t++) {
      const row = starts[i]! + t - prefixes[i]!;
      tokens[row] = prompts[i]![t]!;
      positions[row] = t;
    }
  }
  const w = net.w;
  bufs.ensure({ n, cfg: net.cfg });
  const { x } = bufs;
  const t0 = net.profiler ? net.profiler.now() : 0;
  embeddingForward({ out: x, tokens, weight: w.embed, n, c });
  if (net.profiler) net.profiler.lap('prefill-embedding', t0);
  for (let l = 0; l < net.cfg.nLayers; l++) {
    const kc = kCache[l]!;
    const vc = vCache[l]!;
    const attend = (qkv: Float32Array, att: Float32Array): void => {
      // One native call for every request (bit-identical to the loop below), when available.
      const step = nativeOps?.extendAttentionStep;
      if (step) return step({ qkv, starts, prefixes, slots, r, kc, vc, s, h, hkv, d, out: att });
      for (let i = 0; i < r; i++) {
        const u = starts[i + 1]! - starts[i]!;
        for (let t = 0; t < u; t++) {
          const rowOffset = (starts[i]! + t) * qkvDim;
          writeKv({ kc, vc, row: qkv, rowOffset, slot: slots[i]!, pos: prefixes[i]! + t, s, h, hkv, d });
        }
        extendAttention({
          qkv,
          row0: starts[i]!,
          u,
          prefix: prefixes[i]!,
          slot: slots[i]!,
          kc,
          vc,
          s,
          h,
          hkv,
          d,
          scratch,
          out: att,
        });
      }
    };
    blockForward({
      cfg: net.cfg,
      lw: w.layers[l]!,
      n,
      positions,
      rope: net.rope,
      buf: bufs,
      attend,
      packed: weights?.layers[l],
      prof: net.profiler,
      label: 'prefill-',
    });
  }
  const last = bufs.att; // [R, C] gathered last rows (R <= N; att is free now)
  for (let i = 0; i < r; i++) {
    const src = (starts[i + 1]! - 1) * c;
    for (let e = 0; e < c; e++) last[i * c + e] = x[src + e]!;
  }
  rmsnormForward({ out: lastHidden, rstd: bufs.rstd1, inp: last, weight: w.norm, n: r, c, eps });
}
