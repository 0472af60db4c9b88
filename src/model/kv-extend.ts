/**
 * Prefill with prefix reuse: runs each request's new tokens (its prompt minus the prefix already
 * in its KV slot) through the trunk, attending to the cached prefix, and appends their k and v.
 * N = new tokens over all requests, R = requests, C = dModel, H = heads, D = C / H.
 * Inference only, so every layer reuses the workspace's layer-0 buffers.
 */
import { embeddingForward } from '../tensor/embedding.ts';
import { linearForward } from '../tensor/linear.ts';
import { rmsnormForward } from '../tensor/rmsnorm.ts';
import { ropeForward } from '../tensor/rope.ts';
import { swigluForward } from '../tensor/swiglu.ts';
import { extendAttention, writeKv } from './decode-attention.ts';
import type { LlamaNetwork } from './network.ts';
import type { Workspace } from './workspace.ts';

export interface ExtendArgs {
  net: LlamaNetwork;
  ws: Workspace; // capacity >= N rows
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
  const { net, ws, kCache, vCache, s, slots, prefixes, prompts, scratch, lastHidden } = a;
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
  const x = ws.resid[0]!; // [N, C] residual stream, updated in place
  const ln = ws.ln1[0]!;
  const rstd = ws.rstd1[0]!;
  const qkv = ws.qkv[0]!;
  const att = ws.att[0]!;
  embeddingForward({ out: x, tokens, weight: w.embed, n, c });
  for (let l = 0; l < net.cfg.nLayers; l++) {
    const lw = w.layers[l]!;
    rmsnormForward({ out: ln, rstd, inp: x, weight: lw.ln1, n, c, eps });
    linearForward({ out: qkv, inp: ln, weight: lw.qkv, n, inF: c, outF: 3 * c });
    ropeForward({ x: qkv, n, nHeads: 2 * h, rowStride: 3 * c, offset: 0, positions, table: net.rope });
    for (let i = 0; i < r; i++) {
      const u = starts[i + 1]! - starts[i]!;
      for (let t = 0; t < u; t++) {
        writeKv({ kc: kCache[l]!, vc: vCache[l]!, row: qkv, rowOffset: (starts[i]! + t) * 3 * c, slot: slots[i]!, pos: prefixes[i]! + t, s, h, d });
      }
      extendAttention({ qkv, row0: starts[i]!, u, prefix: prefixes[i]!, slot: slots[i]!, kc: kCache[l]!, vc: vCache[l]!, s, h, d, scratch, out: att });
    }
    linearForward({ out: x, inp: att, weight: lw.o, n, inF: c, outF: c, accumulate: true });
    rmsnormForward({ out: ln, rstd, inp: x, weight: lw.ln2, n, c, eps });
    linearForward({ out: ws.gateUp[0]!, inp: ln, weight: lw.gateUp, n, inF: c, outF: 2 * f });
    swigluForward({ out: ws.act[0]!, sig: ws.sig[0]!, inp: ws.gateUp[0]!, n, f });
    linearForward({ out: x, inp: ws.act[0]!, weight: lw.down, n, inF: f, outF: c, accumulate: true });
  }
  const last = ws.mid[0]!; // [R, C] gathered last rows
  for (let i = 0; i < r; i++) {
    const src = (starts[i + 1]! - 1) * c;
    for (let e = 0; e < c; e++) last[i * c + e] = x[src + e]!;
  }
  rmsnormForward({ out: lastHidden, rstd, inp: last, weight: w.norm, n: r, c, eps });
}
