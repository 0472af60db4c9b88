/**
 * Incremental decoding with a KV cache over ragged sequences.
 *
 * Legend: B = slots (sequences in this generation), A = slots advancing in one step, S = cache
 * length per slot, C = dModel, H = heads, D = C / H, F = mlpHidden, V = vocab.
 * Prefill runs the packed training trunk over all prompts at once (one GEMM per weight) and copies
 * each layer's post-RoPE k and v rows into the cache; every later step runs one new token per
 * advancing slot. Weights are the policy's own views, so new weights are used without copying.
 */
import { embeddingForward } from '../tensor/embedding.ts';
import { linearForward } from '../tensor/linear.ts';
import { rmsnormForward } from '../tensor/rmsnorm.ts';
import { ropeForward } from '../tensor/rope.ts';
import { swigluForward } from '../tensor/swiglu.ts';
import type { ModelConfig } from './config.ts';
import { decodeAttention, writeKv } from './decode-attention.ts';
import type { LlamaNetwork } from './network.ts';
import { packBatch } from './pack.ts';
import { trunkForward } from './transformer.ts';
import { ensureWorkspace, type Workspace } from './workspace.ts';

export class KvDecoder {
  readonly cfg: ModelConfig;
  private readonly net: LlamaNetwork;
  private ws: Workspace | null = null;
  private slots = 0;
  private cacheLen = 0; // S
  // Head-major, so one head's keys are contiguous for the decode dot products.
  private kCache: Float32Array[] = []; // L x [B, H, S, D]
  private vCache: Float32Array[] = []; // L x [B, H, S, D]
  /** Tokens held in each slot's cache. */
  lens = new Int32Array(0); // [B]
  // step buffers, sized for B rows
  private x = new Float32Array(0); // [B, C]
  private ln = new Float32Array(0); // [B, C]
  private rstd = new Float32Array(0); // [B]
  private qkv = new Float32Array(0); // [B, 3C]
  private att = new Float32Array(0); // [B, C]
  private gateUp = new Float32Array(0); // [B, 2F]
  private act = new Float32Array(0); // [B, F]
  private sig = new Float32Array(0); // [B, F]
  private scores = new Float32Array(0); // [B, H, S]
  private qbuf = new Float32Array(0); // [B, C]
  private obuf = new Float32Array(0); // [B, C]
  private positions = new Int32Array(0); // [B]
  /** Logits of the latest start() or step(), row i for the i-th slot passed. */
  logits = new Float32Array(0); // [B, V]

  constructor(net: LlamaNetwork) {
    if (net.head !== 'lm') throw new Error('KvDecoder needs a policy network (lm head)');
    this.net = net;
    this.cfg = net.cfg;
  }

  private allocate(slots: number, cacheLen: number): void {
    const { dModel: c, mlpHidden: f, nLayers, nHeads, vocabSize: v } = this.cfg;
    if (slots > this.slots || cacheLen > this.cacheLen) {
      const b = Math.max(slots, this.slots);
      const s = Math.max(cacheLen, this.cacheLen);
      this.kCache = Array.from({ length: nLayers }, () => new Float32Array(b * s * c));
      this.vCache = Array.from({ length: nLayers }, () => new Float32Array(b * s * c));
      this.x = new Float32Array(b * c);
      this.ln = new Float32Array(b * c);
      this.rstd = new Float32Array(b);
      this.qkv = new Float32Array(b * 3 * c);
      this.att = new Float32Array(b * c);
      this.gateUp = new Float32Array(b * 2 * f);
      this.act = new Float32Array(b * f);
      this.sig = new Float32Array(b * f);
      this.scores = new Float32Array(b * nHeads * s);
      this.qbuf = new Float32Array(b * c);
      this.obuf = new Float32Array(b * c);
      this.positions = new Int32Array(b);
      this.logits = new Float32Array(b * v);
      this.lens = new Int32Array(b);
      this.slots = b;
      this.cacheLen = s;
    }
  }

  /**
   * Prefills slot i with prompts[i] (each non-empty) and leaves in `logits` row i the logits for
   * the token after prompts[i]. maxTotal = the longest any slot will grow (prompt + new tokens).
   */
  start({ prompts, maxTotal }: { prompts: readonly ArrayLike<number>[]; maxTotal: number }): Float32Array {
    const { dModel: c, vocabSize: v, nLayers } = this.cfg;
    this.allocate(prompts.length, maxTotal);
    const batch = packBatch({ sequences: prompts, cfg: this.cfg });
    this.ws = ensureWorkspace({ ws: this.ws, cfg: this.cfg, n: batch.n, probSize: batch.layout.probSize, maxLen: batch.layout.maxLen });
    const ws = this.ws;
    trunkForward({ cfg: this.cfg, w: this.net.w, ws, batch, rope: this.net.rope, prof: this.net.profiler });
    const s = this.cacheLen;
    for (let i = 0; i < prompts.length; i++) {
      const row0 = batch.layout.starts[i]!;
      const len = prompts[i]!.length;
      if (len === 0) throw new Error(`prompt ${i} is empty; a prompt needs at least one token`);
      this.lens[i] = len;
      for (let l = 0; l < nLayers; l++) {
        const qkv = ws.qkv[l]!;
        for (let t = 0; t < len; t++) {
          writeKv({ kc: this.kCache[l]!, vc: this.vCache[l]!, row: qkv, rowOffset: (row0 + t) * 3 * c, slot: i, pos: t, s, h: this.cfg.nHeads, d: c / this.cfg.nHeads });
        }
      }
      this.ln.set(ws.lnf.subarray((row0 + len - 1) * c, (row0 + len) * c), i * c);
    }
    linearForward({ out: this.logits, inp: this.ln, weight: this.net.w.lmHead!, n: prompts.length, inF: c, outF: v });
    return this.logits;
  }

  /**
   * Appends tokens[a] to slot slotIds[a] for a < count and leaves the next-token logits in
   * `logits` row a.
   */
  step({ slotIds, tokens, count }: { slotIds: Int32Array; tokens: Int32Array; count: number }): Float32Array {
    const cfg = this.cfg;
    const { dModel: c, nHeads: h, mlpHidden: f, vocabSize: v, normEps: eps } = cfg;
    const d = c / h;
    const s = this.cacheLen;
    const w = this.net.w;
    const prof = this.net.profiler;
    for (let a = 0; a < count; a++) {
      const pos = this.lens[slotIds[a]!]!;
      if (pos >= s) throw new Error(`KV cache full: slot ${slotIds[a]} holds ${pos} tokens, capacity ${s}`);
      this.positions[a] = pos;
    }
    let t = prof ? prof.now() : 0;
    embeddingForward({ out: this.x, tokens, weight: w.embed, n: count, c });
    for (let l = 0; l < cfg.nLayers; l++) {
      const lw = w.layers[l]!;
      const kc = this.kCache[l]!;
      const vc = this.vCache[l]!;
      rmsnormForward({ out: this.ln, rstd: this.rstd, inp: this.x, weight: lw.ln1, n: count, c, eps });
      linearForward({ out: this.qkv, inp: this.ln, weight: lw.qkv, n: count, inF: c, outF: 3 * c });
      ropeForward({ x: this.qkv, n: count, nHeads: 2 * h, rowStride: 3 * c, offset: 0, positions: this.positions, table: this.net.rope });
      if (prof) t = prof.lap('decode-linear', t);
      decodeAttention({
        qkv: this.qkv, slotIds, positions: this.positions, count, kc, vc, s, h, d,
        qbuf: this.qbuf, scores: this.scores, obuf: this.obuf, out: this.att,
      });
      if (prof) t = prof.lap('decode-attention', t);
      linearForward({ out: this.x, inp: this.att, weight: lw.o, n: count, inF: c, outF: c, accumulate: true });
      rmsnormForward({ out: this.ln, rstd: this.rstd, inp: this.x, weight: lw.ln2, n: count, c, eps });
      linearForward({ out: this.gateUp, inp: this.ln, weight: lw.gateUp, n: count, inF: c, outF: 2 * f });
      swigluForward({ out: this.act, sig: this.sig, inp: this.gateUp, n: count, f });
      linearForward({ out: this.x, inp: this.act, weight: lw.down, n: count, inF: f, outF: c, accumulate: true });
      if (prof) t = prof.lap('decode-linear', t);
    }
    rmsnormForward({ out: this.ln, rstd: this.rstd, inp: this.x, weight: w.norm, n: count, c, eps });
    linearForward({ out: this.logits, inp: this.ln, weight: w.lmHead!, n: count, inF: c, outF: v });
    if (prof) prof.lap('decode-linear', t);
    for (let a = 0; a < count; a++) this.lens[slotIds[a]!]++;
    return this.logits;
  }
}

