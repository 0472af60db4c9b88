import { attentionShape, type ModelConfig } from './config.ts';
import type { BlockBuffers } from './llama-block.ts';

/**
 * Preallocated activation and gradient buffers for up to `capacity` packed tokens, reused across
 * calls so hot loops never allocate. Buffers may be longer than the current batch; every kernel
 * takes explicit row counts. N = capacity rows, C = dModel, F = mlpHidden, V = vocab,
 * P = attention-probability capacity (sum of H * L^2), H = query heads, Hkv = key/value heads,
 * D = head size, Q3 = (H + 2 Hkv) D, Lm = longest sequence.
 *
 * With `recompute`, every layer shares one set of buffers but its input (resid), and the
 * backward runs each layer's forward again just before its backward (transformer.ts): the
 * activations kept cost C floats per token per layer instead of all of them, for one more forward
 * of the trunk. The recomputed values are the same floats, so gradients are bit-identical.
 */
export class Workspace {
  readonly capacity: number;
  readonly probCapacity: number;
  readonly maxLen: number;
  readonly recompute: boolean;
  readonly resid: Float32Array[]; // L+1 x [N, C]: input of each layer, then the trunk output
  readonly ln1: Float32Array[]; // L x [N, C]
  readonly rstd1: Float32Array[]; // L x [N]
  readonly qkvRaw: Float32Array[]; // L x [N, Q3] before q/k norm (qkNorm models; else empty)
  readonly qkRstd: Float32Array[]; // L x [N, H + Hkv] (qkNorm models; else empty)
  readonly qkv: Float32Array[]; // L x [N, Q3] post-RoPE q, k and v
  readonly probs: Float32Array[]; // L x [P]
  readonly att: Float32Array[]; // L x [N, H D]
  readonly mid: Float32Array[]; // L x [N, C] residual after attention
  readonly ln2: Float32Array[]; // L x [N, C]
  readonly rstd2: Float32Array[]; // L x [N]
  readonly gateUp: Float32Array[]; // L x [N, 2F]
  readonly act: Float32Array[]; // L x [N, F]
  readonly sig: Float32Array[]; // L x [N, F] sigmoid(gate)
  readonly lnf: Float32Array; // [N, C]
  readonly rstdf: Float32Array; // [N]
  readonly logits: Float32Array; // [N, V] logits, then probabilities
  readonly lp: Float32Array; // [N] log-prob of the next token
  readonly ent: Float32Array; // [N]
  readonly values: Float32Array; // [N]
  // gradients (scratch, reused per layer)
  readonly dres: Float32Array; // [N, C]
  readonly dln: Float32Array; // [N, C]
  readonly datt: Float32Array; // [N, H D]
  readonly dqkv: Float32Array; // [N, Q3]
  readonly dqkvRaw: Float32Array; // [N, Q3] before q/k norm (qkNorm models; else empty)
  readonly dgateUp: Float32Array; // [N, 2F]
  readonly dact: Float32Array; // [N, F]
  readonly dlnf: Float32Array; // [N, C]
  readonly dlogits: Float32Array; // [N, V]
  readonly dlp: Float32Array; // [N]
  readonly dent: Float32Array; // [N]
  readonly dvalues: Float32Array; // [N]
  readonly attScratch: Float32Array; // [H, Lm, Lm]
  private readonly layers: BlockBuffers[]; // L: each layer's buffers as blockForward takes them

  constructor({
    cfg,
    capacity,
    probCapacity,
    maxLen,
    recompute = false,
  }: {
    cfg: ModelConfig;
    capacity: number;
    probCapacity: number;
    maxLen: number;
    recompute?: boolean;
  }) {
    const { dModel: c, mlpHidden: f, vocabSize: v, nLayers: nl } = cfg;
    const { h, hkv, qDim, qkvDim } = attentionShape(cfg);
    const qkn = cfg.qkNorm === true;
    const n = Math.max(1, capacity);
    this.capacity = n;
    this.probCapacity = probCapacity;
    this.maxLen = maxLen;
    this.recompute = recompute;
    const per = (size: number) =>
      recompute
        ? new Array<Float32Array>(nl).fill(new Float32Array(size))
        : Array.from({ length: nl }, () => new Float32Array(size));
    this.resid = Array.from({ length: nl + 1 }, () => new Float32Array(n * c));
    this.ln1 = per(n * c);
    this.rstd1 = per(n);
    this.qkvRaw = per(qkn ? n * qkvDim : 0);
    this.qkRstd = per(qkn ? n * (h + hkv) : 0);
    this.qkv = per(n * qkvDim);
    this.probs = per(Math.max(1, probCapacity));
    this.att = per(n * qDim);
    this.mid = per(n * c);
    this.ln2 = per(n * c);
    this.rstd2 = per(n);
    this.gateUp = per(n * 2 * f);
    this.act = per(n * f);
    this.sig = per(n * f);
    this.lnf = new Float32Array(n * c);
    this.rstdf = new Float32Array(n);
    this.logits = new Float32Array(n * v);
    this.lp = new Float32Array(n);
    this.ent = new Float32Array(n);
    this.values = new Float32Array(n);
    this.dres = new Float32Array(n * c);
    this.dln = new Float32Array(n * c);
    this.datt = new Float32Array(n * qDim);
    this.dqkv = new Float32Array(n * qkvDim);
    this.dqkvRaw = new Float32Array(qkn ? n * qkvDim : 0);
    this.dgateUp = new Float32Array(n * 2 * f);
    this.dact = new Float32Array(n * f);
    this.dlnf = new Float32Array(n * c);
    this.dlogits = new Float32Array(n * v);
    this.dlp = new Float32Array(n);
    this.dent = new Float32Array(n);
    this.dvalues = new Float32Array(n);
    this.attScratch = new Float32Array(Math.max(1, cfg.nHeads * maxLen * maxLen));
    this.layers = Array.from({ length: nl }, (_, l) => ({
      x: this.resid[l]!,
      ln1: this.ln1[l]!,
      rstd1: this.rstd1[l]!,
      qkvRaw: qkn ? this.qkvRaw[l]! : null,
      qkRstd: this.qkRstd[l]!,
      qkv: this.qkv[l]!,
      att: this.att[l]!,
      mid: this.mid[l]!,
      ln2: this.ln2[l]!,
      rstd2: this.rstd2[l]!,
      gateUp: this.gateUp[l]!,
      act: this.act[l]!,
      sig: this.sig[l]!,
      out: this.resid[l + 1]!,
    }));
  }

  /** Layer l's activations (kept for the backward), as blockForward reads and writes them. */
  layer(l: number): BlockBuffers {
    return this.layers[l]!;
  }

  fits({
    n,
    probSize,
    maxLen,
    recompute,
  }: {
    n: number;
    probSize: number;
    maxLen: number;
    recompute: boolean;
  }): boolean {
    return n <= this.capacity && probSize <= this.probCapacity && maxLen <= this.maxLen && recompute === this.recompute;
  }
}

/** Returns ws if the batch fits, else a new workspace sized for it (old one is dropped). */
export function ensureWorkspace({
  ws,
  cfg,
  n,
  probSize,
  maxLen,
  recompute = false,
}: {
  ws: Workspace | null;
  cfg: ModelConfig;
  n: number;
  probSize: number;
  maxLen: number;
  recompute?: boolean;
}): Workspace {
  if (ws && ws.fits({ n, probSize, maxLen, recompute })) return ws;
  return new Workspace({
    cfg,
    capacity: Math.max(n, ws?.capacity ?? 0),
    probCapacity: Math.max(probSize, ws?.probCapacity ?? 0),
    maxLen: Math.max(maxLen, ws?.maxLen ?? 0),
    recompute,
  });
}
