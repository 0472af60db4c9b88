import { AdamW } from '../../optim/adamw.ts';
import { parseOptimizerConfig, type OptimizerConfig } from '../../optim/config.ts';
import { ropeTable } from '../../tensor/rope.ts';
import type { RopeTable } from '../../tensor/op-args.ts';
import type { Rng } from '../../util/random.ts';
import { headDim, parseModelConfig, type ModelConfig } from './config.ts';
import { prepareInferenceWeights, type InferenceWeights } from './inference-weights.ts';
import { copyExcept, productAt, productRanges } from './layer-products.ts';
import { packBatch, type PackedBatch } from './pack.ts';
import type { Profiler } from './profiler.ts';
import { trunkBackward, trunkForward, type LayerSource, type WeightGradHook } from './transformer.ts';
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
  private buf: Float32Array; // [P]
  private views: WeightViews;
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
   * Set by LoRA adapters on a bf16 base (lora/merged-layers.ts): training and the sampler's copy
   * read layer l's four products from it, materialized on demand, instead of `w.layers[l]`, whose
   * products the network then no longer holds (releaseRanges).
   */
  layerSource: LayerSource | null = null;
  /**
   * The embedding table is not trained: the backward forms no gradient for it and AdamW skips it,
   * so its gradient and moments never take memory (a critic's, critic.ts; set before the first step).
   */
  frozenEmbedding = false;
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
    this.buf = params ?? new Float32Array(total);
    if (!params) {
      if (!rng) throw new Error('a new network needs an Rng for its initial weights');
      initWeights({ buf: this.buf, specs: this.specs, cfg: this.cfg, rng });
    }
    this.views = weightViews({ buf: this.buf, specs: this.specs, cfg: this.cfg, head });
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
    const frozen = (s: TensorSpec) => this.frozenEmbedding && s.name === 'model.embed_tokens.weight';
    this.adamw ??= new AdamW({
      cfg: this.optim,
      size: this.params.length,
      ranges: this.specs.map((s) => (frozen(s) ? { ...s, frozen: true } : s)),
    });
    return this.adamw;
  }

  /** The flat parameters [P] (after releaseRanges, a new buffer whose released ranges read 0). */
  get params(): Float32Array {
    return this.buf;
  }

  /** Typed views of `params`. */
  get w(): WeightViews {
    return this.views;
  }

  /**
   * Moves the parameters to a new buffer in which `ranges` are never written, so their pages are
   * never mapped: the f32 values there (a LoRA base's layer products, now held in bf16 by the
   * adapter) stop costing memory once the old buffer is collected. Whoever releases a range must
   * supply its values another way (layerSource); readers of `params` see zeros there.
   */
  releaseRanges(ranges: readonly { offset: number; size: number }[]): void {
    this.buf = copyExcept(this.buf, ranges);
    this.views = weightViews({ buf: this.buf, specs: this.specs, cfg: this.cfg, head: this.head });
    this.gradViews = null;
    this.frozenViews = null;
    this.prepared = null;
    this.version++;
  }

  /**
   * Tensor s's values: a view of `params`, or, for a layer product's tensor when a layer source
   * supplies them, a view of the source's materialized layer, valid until another layer is read
   * (checkpoint.ts streams the tensors one at a time).
   */
  tensor(s: TensorSpec): Float32Array {
    const r = this.layerSource ? productAt(productRanges(this.views, this.buf), s.offset) : undefined;
    if (r) return this.layerSource!(r.layer)[r.product].subarray(s.offset - r.offset, s.offset - r.offset + s.size);
    return this.buf.subarray(s.offset, s.offset + s.size);
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
    trunkForward({
      cfg: this.cfg,
      w: this.w,
      ws: this.ws,
      batch,
      rope: this.rope,
      prof: this.profiler,
      layers: this.layerSource,
    });
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
      layers: this.layerSource,
      frozenEmbedding: this.frozenEmbedding,
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
    this.prepared = prepareInferenceWeights({
      cfg: this.cfg,
      w: this.w,
      precision,
      version: this.version,
      old,
      layers: this.layerSource,
    });
    // Without a prepared copy the sampler would read w.layers, whose products a layer source replaced.
    if (!this.prepared && this.layerSource)
      throw new Error(
        'a network whose layer products come from a layer source (LoRA on a bf16 base) samples from a prepared copy: build the native addon or sample in bf16',
      );
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
