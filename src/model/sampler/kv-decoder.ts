/**
 * Incremental decoding with a KV cache over ragged sequences.
 *
 * Legend: B = slots, A = slots advancing in one step, R = requests in one start(), S = cache
 * length per slot, C = dModel, H = query heads, Hkv = key/value heads, D = head size,
 * F = mlpHidden, V = vocab.
 * start() gives each prompt a slot. Slots keep their tokens between calls, so a prompt that
 * extends an earlier prompt + generation (the next turn of an episode) reuses the cached prefix
 * and only its new tokens are run (kv-extend.ts: all prompts' new tokens packed, one GEMM per
 * weight). step() then runs one new token per advancing slot.
 * Weights are read in `precision` (network/weight-precision.ts): the network prepares its matrices once per
 * weight version (f32 packed, or f16 / bf16), so new weights are picked up on the next call; the
 * cache is dropped when the network's weight version changes (step() or markWeightsChanged()).
 */
import { embeddingForward } from '../../tensor/embedding.ts';
import { linearForward } from '../../tensor/linear.ts';
import { rmsnormForward } from '../../tensor/rmsnorm.ts';
import { attentionShape, type ModelConfig } from '../network/config.ts';
import { decodeAttention } from './decode-attention.ts';
import type { InferenceWeights } from '../network/inference-weights.ts';
import { extendForward } from './kv-extend.ts';
import { blockForward, InferenceBuffers } from '../network/llama-block.ts';
import type { LlamaNetwork } from '../network/network.ts';
import type { WeightPrecision } from '../network/weight-precision.ts';

export class KvDecoder {
  readonly cfg: ModelConfig;
  private readonly net: LlamaNetwork;
  readonly precision: WeightPrecision;
  private readonly extendBufs = new InferenceBuffers(); // prefill rows
  private readonly stepBufs = new InferenceBuffers(); // decode rows, one per slot
  private slots = 0;
  private cacheLen = 0; // S
  // Head-major, so one (slot, kv head)'s keys are contiguous (see decode-attention.ts).
  private kCache: Float32Array[] = []; // L x [B, Hkv, S, D]
  private vCache: Float32Array[] = []; // L x [B, Hkv, S, D]
  /** Tokens held in each slot's cache. */
  lens = new Int32Array(0); // [B]
  private history = new Int32Array(0); // [B, S] the tokens behind each slot's cache
  private cacheVersion = -1; // net.version the cache was computed with
  private extendScratch = new Float32Array(0); // [H, U, S]
  // decode attention scratch of the TypeScript path
  private scores = new Float32Array(0); // [B, H, S]
  private qbuf = new Float32Array(0); // [B, H D]
  private obuf = new Float32Array(0); // [B, H D]
  private positions = new Int32Array(0); // [B]
  /** Logits of the latest start() or step(), row i for the i-th slot passed. */
  logits = new Float32Array(0); // [B, V]

  constructor(net: LlamaNetwork, precision: WeightPrecision = 'f32') {
    if (net.head !== 'lm') throw new Error('KvDecoder needs a policy network (lm head)');
    this.net = net;
    this.precision = precision;
    this.cfg = net.cfg;
  }

  /** Grows buffers to hold `slots` slots of `cacheLen` tokens, keeping every slot's cache. */
  private allocate(slots: number, cacheLen: number): void {
    const { nLayers, vocabSize: v } = this.cfg;
    const { h, hkv, d, qDim } = attentionShape(this.cfg);
    if (slots <= this.slots && cacheLen <= this.cacheLen) return;
    const b = Math.max(slots, this.slots);
    const s = Math.max(cacheLen, this.cacheLen);
    const oldS = this.cacheLen;
    const regrow = (old: Float32Array): Float32Array => {
      const out = new Float32Array(b * hkv * s * d);
      // [B, Hkv, S, D]: copy each (slot, kv head) run of S * D to its new stride.
      for (let sh = 0; sh < this.slots * hkv; sh++)
        out.set(old.subarray(sh * oldS * d, (sh + 1) * oldS * d), sh * s * d);
      return out;
    };
    this.kCache = Array.from({ length: nLayers }, (_, l) => regrow(this.kCache[l] ?? new Float32Array(0)));
    this.vCache = Array.from({ length: nLayers }, (_, l) => regrow(this.vCache[l] ?? new Float32Array(0)));
    const history = new Int32Array(b * s);
    for (let slot = 0; slot < this.slots; slot++)
      history.set(this.history.subarray(slot * oldS, (slot + 1) * oldS), slot * s);
    this.history = history;
    const lens = new Int32Array(b);
    lens.set(this.lens);
    this.lens = lens;
    this.stepBufs.ensure({ n: b, cfg: this.cfg });
    this.scores = new Float32Array(b * h * s);
    this.qbuf = new Float32Array(b * qDim);
    this.obuf = new Float32Array(b * qDim);
    this.positions = new Int32Array(b);
    this.logits = new Float32Array(b * v);
    this.slots = b;
    this.cacheLen = s;
  }

  /**
   * Puts each prompt (non-empty) in a slot and leaves in `logits` row i the logits for the token
   * after prompts[i]. Returns the slot of each prompt. maxTotal = the longest any slot will grow
   * (prompt + new tokens).
   */
  start({ prompts, maxTotal }: { prompts: readonly ArrayLike<number>[]; maxTotal: number }): {
    logits: Float32Array;
    slots: Int32Array;
  } {
    const { dModel: c, vocabSize: v } = this.cfg;
    prompts.forEach((p, i) => {
      if (p.length === 0) throw new Error(`prompt ${i} is empty; a prompt needs at least one token`);
    });
    this.allocate(prompts.length, maxTotal);
    if (this.cacheVersion !== this.net.version) {
      this.lens.fill(0);
      this.cacheVersion = this.net.version;
    }
    const { slots, prefixes } = this.assignSlots(prompts);
    const weights = this.net.inferenceWeights(this.precision);
    this.prefill(prompts, slots, prefixes, weights);
    const s = this.cacheLen;
    prompts.forEach((p, i) => {
      const slot = slots[i]!;
      for (let t = prefixes[i]!; t < p.length; t++) this.history[slot * s + t] = p[t]!;
      this.lens[slot] = p.length;
    });
    // stepBufs.ln1 holds each prompt's final-normed last hidden state, row i for prompt i.
    linearForward({
      out: this.logits,
      inp: this.stepBufs.ln1,
      weight: this.net.w.lmHead!,
      n: prompts.length,
      inF: c,
      outF: v,
      packed: weights?.lmHead,
    });
    return { logits: this.logits, slots };
  }

  /**
   * Greedy, in request order: each prompt takes the free slot sharing its longest token prefix.
   * At least the last prompt token is recomputed, since its logits are needed.
   */
  private assignSlots(prompts: readonly ArrayLike<number>[]): { slots: Int32Array; prefixes: Int32Array } {
    const s = this.cacheLen;
    const used = new Uint8Array(this.slots);
    const slots = new Int32Array(prompts.length);
    const prefixes = new Int32Array(prompts.length);
    prompts.forEach((p, i) => {
      let best = -1;
      let bestLen = -1;
      for (let slot = 0; slot < this.slots; slot++) {
        if (used[slot]) continue;
        const limit = Math.min(this.lens[slot]!, p.length - 1);
        let k = 0;
        while (k < limit && this.history[slot * s + k] === p[k]) k++;
        if (k > bestLen) {
          best = slot;
          bestLen = k;
        }
      }
      used[best] = 1;
      slots[i] = best;
      prefixes[i] = bestLen;
    });
    return { slots, prefixes };
  }

  /** Runs each prompt's uncached tokens (all of it for a fresh slot) through the trunk. */
  private prefill(
    prompts: readonly ArrayLike<number>[],
    slots: Int32Array,
    prefixes: Int32Array,
    weights: InferenceWeights | null,
  ): void {
    let maxNew = 0;
    prompts.forEach((p, i) => {
      maxNew = Math.max(maxNew, p.length - prefixes[i]!);
    });
    const need = this.cfg.nHeads * maxNew * this.cacheLen;
    if (this.extendScratch.length < need) this.extendScratch = new Float32Array(need);
    extendForward({
      net: this.net,
      weights,
      bufs: this.extendBufs,
      kCache: this.kCache,
      vCache: this.vCache,
      s: this.cacheLen,
      slots,
      prefixes,
      prompts,
      scratch: this.extendScratch,
      lastHidden: this.stepBufs.ln1,
    });
  }

  /**
   * Appends tokens[a] to slot slotIds[a] for a < count and leaves the next-token logits in
   * `logits` row a.
   */
  step({ slotIds, tokens, count }: { slotIds: Int32Array; tokens: Int32Array; count: number }): Float32Array {
    const cfg = this.cfg;
    const { dModel: c, vocabSize: v, normEps: eps } = cfg;
    const { h, hkv, d } = attentionShape(cfg);
    const s = this.cacheLen;
    const w = this.net.w;
    const prof = this.net.profiler;
    for (let a = 0; a < count; a++) {
      const pos = this.lens[slotIds[a]!]!;
      if (pos >= s) throw new Error(`KV cache full: slot ${slotIds[a]} holds ${pos} tokens, capacity ${s}`);
      this.positions[a] = pos;
    }
    const buf = this.stepBufs;
    const packed = this.net.inferenceWeights(this.precision);
    let t = prof ? prof.now() : 0;
    embeddingForward({ out: buf.x, tokens, weight: w.embed, n: count, c });
    if (prof) prof.lap('decode-embedding', t);
    for (let l = 0; l < cfg.nLayers; l++) {
      const kc = this.kCache[l]!;
      const vc = this.vCache[l]!;
      const { positions, qbuf, scores, obuf } = this;
      const attend = (qkv: Float32Array, out: Float32Array): void =>
        decodeAttention({ qkv, slotIds, positions, count, kc, vc, s, h, hkv, d, qbuf, scores, obuf, out });
      blockForward({
        cfg,
        lw: w.layers[l]!,
        n: count,
        positions,
        rope: this.net.rope,
        buf,
        attend,
        packed: packed?.layers[l],
        prof,
        label: 'decode-',
      });
    }
    t = prof ? prof.now() : 0;
    rmsnormForward({ out: buf.ln1, rstd: buf.rstd1, inp: buf.x, weight: w.norm, n: count, c, eps });
    if (prof) t = prof.lap('decode-rmsnorm', t);
    linearForward({
      out: this.logits,
      inp: buf.ln1,
      weight: w.lmHead!,
      n: count,
      inF: c,
      outF: v,
      packed: packed?.lmHead,
    });
    if (prof) prof.lap('decode-linear-head', t);
    for (let a = 0; a < count; a++) {
      const slot = slotIds[a]!;
      this.history[slot * s + this.lens[slot]!] = tokens[a]!;
      this.lens[slot]!++;
    }
    return this.logits;
  }
}
