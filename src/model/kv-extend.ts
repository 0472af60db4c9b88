/**
 * Prefill with prefix reuse: runs each request's new tokens (its prompt minus the prefix already
 * in its KV slot) through the trunk, attending to the cached prefix, and appends their k and v.
 * N = new tokens over all requests, R = requests, C = dModel, H = heads, D = C / H.
 * Inference only: one set of row buffers serves every layer, so a long prefill costs a few
 * [N, F] buffers, not a training workspace's per-layer activations.
 */
import { embeddingForward } from '../tensor/embedding.ts';
import { linearForward } from '../tensor/linear.ts';
import { rmsnormForward } from '../tensor/rmsnorm.ts';
import { ropeForward } from '../tensor/rope.ts';
import { swigluForward } from '../tensor/swiglu.ts';
import { extendAttention, writeKv } from './decode-attention.ts';
import type { LlamaNetwork } from './network.ts';

/** Row buffers for up to `capacity` new tokens. */
export class ExtendBuffers {
  capacity = 0;
  x = new Float32Array(0); // [N, C] residual stream
  ln = new Float32Array(0); // [N, C]
  rstd = new Float32Array(0); // [N]
  qkv = new Float32Array(0); // [N, 3C]
  att = new Float32Array(0); // [N, C]
  gateUp = new Float32Array(0); // [N, 2F]
  act = new Float32Array(0); // [N, F]
  sig = new Float32Array(0); // [N, F]

  ensure({ n, c, f }: { n: number; c: number; f: number }): void {
    if (n <= this.capacity) return;
    this.capacity = n;
    this.x = new Float32Array(n * c);
    this.ln = new Float32Array(n * c);
    this.rstd = new Float32Array(n);
    this.qkv = new Float32Array(n * 3 * c);
    this.att = new Float32Array(n * c);
    this.gateUp = new Float32Array(n * 2 * f);
    this.act = new Float32Array(n * f);
    this.sig = new Float32Array(n * f);
  }
}

export interface ExtendArgs {
  net: LlamaNetwork;
  bufs: ExtendBuffers;
  kCache: Float32Array[]; // L x [B, H, S, D]
  vCache: Float32Array[]; // L x [B, H, S, D]
  s: number;
  slots: Int32Array; // [R]
  prefixes: Int32Array; // [R] tokens already cached in each slot (kept)
  prompts: readonly ArrayLike<number>[]; // [R] full prompts; tokens from prefixes[i] on are new
  scratch: Float32Array; // [H, max new tokens, S]
  lastHidden: Float32Array; // [R, C] out: final-normed hidden state of each prompt's last token
}

export function extendForward(a: ExtendArgs): void {
  const { net, bufs, kCache, vCache, s, slots, prefixes, prompts, scratch, lastHidden } = a;
  const { dModel: c, nHeads: h, mlpHidden: f, normEps: eps } = net.cfg;
  const d = c / h;
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
  bufs.ensure({ n, c, f });
  const { x, ln, rstd, qkv, att } = bufs;
  embeddingForward({ out: x, tokens, weight: w.embed, n, c });
  for (let l = 0; l < net.cfg.nLayers; l++) {
    const lw = w.layers[l]!;
    rmsnormForward({ out: ln, rstd, inp: x, weight: lw.ln1, n, c, eps });
    linearForward({ out: qkv, inp: ln, weight: lw.qkv, n, inF: c, outF: 3 * c });
    ropeForward({ x: qkv, n, nHeads: 2 * h, rowStride: 3 * c, offset: 0, positions, table: net.rope });
    for (let i = 0; i < r; i++) {
      const u = starts[i + 1]! - starts[i]!;
      for (let t = 0; t < u; t++) {
        writeKv({
          kc: kCache[l]!,
          vc: vCache[l]!,
          row: qkv,
          rowOffset: (starts[i]! + t) * 3 * c,
          slot: slots[i]!,
          pos: prefixes[i]! + t,
          s,
          h,
          d,
        });
      }
      extendAttention({
        qkv,
        row0: starts[i]!,
        u,
        prefix: prefixes[i]!,
        slot: slots[i]!,
        kc: kCache[l]!,
        vc: vCache[l]!,
        s,
        h,
        d,
        scratch,
        out: att,
      });
    }
    linearForward({ out: x, inp: att, weight: lw.o, n, inF: c, outF: c, accumulate: true });
    rmsnormForward({ out: ln, rstd, inp: x, weight: lw.ln2, n, c, eps });
    linearForward({ out: bufs.gateUp, inp: ln, weight: lw.gateUp, n, inF: c, outF: 2 * f });
    swigluForward({ out: bufs.act, sig: bufs.sig, inp: bufs.gateUp, n, f });
    linearForward({ out: x, inp: bufs.act, weight: lw.down, n, inF: f, outF: c, accumulate: true });
  }
  const last = att; // [R, C] gathered last rows (R <= N; att is free now)
  for (let i = 0; i < r; i++) {
    const src = (starts[i + 1]! - 1) * c;
    for (let e = 0; e < c; e++) last[i * c + e] = x[src + e]!;
  }
  rmsnormForward({ out: lastHidden, rstd, inp: last, weight: w.norm, n: r, c, eps });
}
