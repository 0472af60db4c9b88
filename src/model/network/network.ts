import { AdamW } from '../../optim/adamw.ts';
import { parseOptimizerConfig, type OptimizerConfig } from '../../optim/config.ts';
import { ropeTable } from '../../tensor/rope.ts';
import type { RopeTable } from '../../tensor/op-args.ts';
import type { Rng } from '../../util/random.ts';
import { headDim, parseModelConfig, type ModelConfig } from './config.ts';
import { prepareInferenceWeights, type InferenceWeights } from './inference-weights.ts';
import { packBatch, type PackedBatch } from './pack.ts';
import type { Profiler } from './profiler.ts';
import { trunkBackward, trunkForward, type WeightGradHook } from './transformer.ts';
import type { WeightPrecision } from './weight-precision.ts';
import {
  initWeights,
  paramCount,
  tensorSpecs,
  weightViews,
  type HeadKind,
  type TensorSpec,
  type WeightViews,
} from './weights.ts';
import { ensureWorkspace, type Workspace } from './workspace.ts';

/**
 * What policy and critic share: config, flat parameters and gradients with typed views, the RoPE
 * table, the optimizer, a reusable workspace, and the "one train forward, then one backward"
 * bookkeeping. P = parameter count.
 */
export class LlamaNetwork {
  readonly cfg: ModelConfig;
  readonly head: HeadKind;
  readonly specs: readonly TensorSpec[];
  readonly params: Float32Array; // [P]
  readonly w: WeightViews;
  readonly rope: RopeTable;
  /** Set by the benchmark to get a per-kernel time breakdown. */
  profiler: Profiler | undefined;
  /**
   * Keep only each layer's input and recompute the rest in the backward (workspace.ts): less
   * memory per token, one more trunk forward per backward, the same gradients.
   */
  recompute = false;
  /**
   * Set by LoRA adapters (model/lora/lora-adapter.ts): the layers' weight gradients go to it
   * instead of `grads`, and the LM head's is not computed (the base is frozen).
   */
  weightGrad: WeightGradHook | null = null;
  /**
   * Bumped whenever the weights change (step(), markWeightsChanged()), so caches derived from
   * them (the sampler's KV cache) know to start over.
   */
  version = 0;
  private ws: Workspace | null = null;
  private pending: PackedBatch | null = null;
  private prepared: InferenceWeights | null = null;
  private readonly optim: OptimizerConfig;
  private adamw: AdamW | null = null;
  private gradBuf: Float32Array | null = null;
  private gradViews: WeightViews | null = null;
  private frozenViews: WeightViews | null = null;

  constructor({
    cfg,
    head,
    optim,
    rng,
    params,
  }: {
    cfg: ModelConfig;
    head: HeadKind;
    optim: OptimizerConfig;
    rng?: Rng;
    params?: Float32Array;
  }) {
    this.cfg = parseModelConfig(cfg);
    this.head = head;
    this.specs = tensorSpecs(this.cfg, head);
    const total = paramCount(this.specs);
    if (params && params.length !== total)
      throw new Error(`parameter buffer has ${params.length} floats, the model needs ${total}`);
    this.params = params ?? new Float32Array(total);
    if (!params) {
      if (!rng) throw new Error('a new network needs an Rng for its initial weights');
      initWeights({ buf: this.params, specs: this.specs, cfg: this.cfg, rng });
    }
    this.w = weightViews({ buf: this.params, specs: this.specs, cfg: this.cfg, head });
    this.rope = ropeTable({
      maxPositions: this.cfg.maxSeqLen,
      headDim: headDim(this.cfg),
      theta: this.cfg.ropeTheta,
      scaling: this.cfg.ropeScaling,
    });
    this.optim = parseOptimizerConfig(optim);
  }

  /**
   * AdamW over every parameter, made on first use: its two moments are twice the weights, which a
   * network that only samples, or trains through LoRA adapters (model/lora/), never needs.
   */
  get optimizer(): AdamW {
    this.adamw ??= new AdamW({ cfg: this.optim, size: this.params.length, ranges: this.specs });
    return this.adamw;
  }

  /** dLoss/dparams [P], made on first use, like the optimizer (a frozen base never forms them). */
  get grads(): Float32Array {
    this.gradBuf ??= new Float32Array(this.params.length);
    return this.gradBuf;
  }

  /** Typed views of `grads`. */
  get g(): WeightViews {
    this.gradViews ??= weightViews({ buf: this.grads, specs: this.specs, cfg: this.cfg, head: this.head });
    return this.gradViews;
  }

  /** The optimizer's config, without making the optimizer. */
  get optimizerConfig(): OptimizerConfig {
    return this.optim;
  }

  get paramCount(): number {
    return this.params.length;
  }

  /** Packs and runs the trunk; the head reads ws.lnf. */
  runTrunk(tokens: readonly ArrayLike<number>[], train: boolean): { batch: PackedBatch; ws: Workspace } {
    const batch = packBatch({ sequences: tokens, cfg: this.cfg });
    this.ws = ensureWorkspace({
      ws: this.ws,
      cfg: this.cfg,
      n: batch.n,
      probSize: batch.layout.probSize,
      maxLen: batch.layout.maxLen,
      recompute: this.recompute,
    });
    // Any forward overwrites the saved activations, so only the latest train forward may be followed by backward.
    this.pending = train ? batch : null;
    trunkForward({ cfg: this.cfg, w: this.w, ws: this.ws, batch, rope: this.rope, prof: this.profiler });
    return { batch, ws: this.ws };
  }

  /** The batch of the last forward({ train: true }), consumed by backward. */
  takePending(): { batch: PackedBatch; ws: Workspace } {
    if (!this.pending || !this.ws)
      throw new Error('backward() needs a preceding forward(tokens, { train: true }) with no other forward in between');
    const batch = this.pending;
    this.pending = null;
    return { batch, ws: this.ws };
  }

  backwardTrunk(batch: PackedBatch, ws: Workspace): void {
    trunkBackward({
      cfg: this.cfg,
      w: this.w,
      g: this.weightGrad ? this.frozenGrads() : this.g,
      ws,
      batch,
      rope: this.rope,
      prof: this.profiler,
      weightGrad: this.weightGrad,
    });
  }

  step(): { gradNorm: number; lr: number } {
    this.version++;
    return this.optimizer.step(this.params, this.grads);
  }

  /** Call after writing to `params` directly (not needed after step()). */
  markWeightsChanged(): void {
    this.version++;
  }

  /**
   * The weight matrices prepared for inference in `precision` (inference-weights.ts) at the
   * current weight version, remade after the weights change; null for f32 without the native
   * addon. For the sampler, which runs the same weights many times between steps; training reads
   * the f32 weights themselves. One precision is kept at a time (asking for another drops it).
   */
  inferenceWeights(precision: WeightPrecision): InferenceWeights | null {
    const p = this.prepared;
    if (p?.version === this.version && p.precision === precision) return p;
    // Another precision's copy is dropped first, so the two never take memory together.
    const old = p?.precision === precision ? p : null;
    this.prepared = null;
    this.prepared = prepareInferenceWeights({ cfg: this.cfg, w: this.w, precision, version: this.version, old });
    return this.prepared;
  }

  zeroGrad(): void {
    this.gradBuf?.fill(0);
  }

  /**
   * Where the trunk's backward puts the gradients of a frozen base (weightGrad set): the norms'
   * land in one scratch of a row's size, zeroed before each backward and never read; the
   * matrices' and embeddings' are not formed (empty views), so the P floats of `grads` are never made.
   */
  private frozenGrads(): WeightViews {
    if (!this.frozenViews) {
      const sink = new Float32Array(Math.max(this.cfg.dModel, headDim(this.cfg)));
      const none = new Float32Array(0);
      this.frozenViews = {
        embed: none,
        layers: this.w.layers.map(() => ({
          ln1: sink,
          qkv: none,
          qNorm: this.cfg.qkNorm ? sink : null,
          kNorm: this.cfg.qkNorm ? sink : null,
          o: none,
          ln2: sink,
          gateUp: none,
          down: none,
        })),
        norm: sink,
        lmHead: none,
        score: null,
        scoreBias: null,
      };
    }
    this.frozenViews.norm.fill(0);
    return this.frozenViews;
  }
}

/** Splits a packed per-row array into the trainable.ts position convention: out[t] = row[start + t - 1], out[0] = 0. */
export function unpackShifted(rows: Float32Array, batch: PackedBatch): Float32Array[] {
  const { starts, lengths } = batch.layout;
  const out: Float32Array[] = [];
  for (let s = 0; s < starts.length; s++) {
    const l = lengths[s]!;
    const a = new Float32Array(l);
    if (l > 1) a.set(rows.subarray(starts[s], starts[s]! + l - 1), 1);
    out.push(a);
  }
  return out;
}

/** The inverse: per-sequence gradients (index t) into packed rows (row start + t - 1). */
export function packShifted({
  rows,
  grads,
  batch,
  what,
}: {
  rows: Float32Array;
  grads: readonly Float32Array[];
  batch: PackedBatch;
  what: string;
}): void {
  const { starts, lengths } = batch.layout;
  if (grads.length !== starts.length)
    throw new Error(`backward: got ${grads.length} ${what} gradient arrays for ${starts.length} sequences`);
  rows.fill(0, 0, batch.n);
  for (let s = 0; s < starts.length; s++) {
    const l = lengths[s]!;
    const gr = grads[s]!;
    if (gr.length !== l)
      throw new Error(`backward: ${what} gradient ${s} has length ${gr.length}, its sequence has ${l} tokens`);
    if (l > 1) rows.set(gr.subarray(1, l), starts[s]);
  }
}
