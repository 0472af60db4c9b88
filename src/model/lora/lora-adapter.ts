/**
 * LoRA adapters on a frozen base, trained through a LlamaNetwork that runs on the merged weights.
 *
 * The network's parameters always hold W = W0 + s B A for every adapted matrix (and the base
 * itself elsewhere), so its forward, backward, sampler and checkpoints read one set of weights and
 * sampling runs at the full model's speed: the merge happens once per policy version, in step().
 * The network's backward hands each layer product's rows to the adapter (net.weightGrad), which
 * adds A's and B's gradients from them without forming any dW (lora-math.ts), and skips the LM
 * head's; step() takes one AdamW step on A and B only, re-merges and drops the network's other
 * gradients (the base is frozen). Memory: a frozen copy of the adapted matrices in place of the
 * full model's two AdamW moments (docs/lora.md).
 *
 * With storage 'base' the network does not hold the merged f32 products at all: the base's layer
 * products stay frozen in bf16 (when exact) in merged-layers.ts, the network's f32 copy of them is
 * released, and the trunk and the sampler's copy read each layer merged on demand, bit for bit the
 * values the merged storage holds. Readers of `net.params` then see zeros in the layer products:
 * the checkpoint writer (net.tensor) and a critic's trunk copy read through the layer source,
 * and withBaseWeights (the PyTorch trainer's init) refuses this storage (docs/lora.md "Storage").
 *
 * Layout of `params` (and `grads`): matrix by matrix in loraMatrices order, A [r, I] then B [O, r].
 */
import { AdamW } from '../../optim/adamw.ts';
import type { OptimizerConfig } from '../../optim/config.ts';
import type { Rng } from '../../util/random.ts';
import type { LlamaNetwork } from '../network/network.ts';
import { loraMatrices, loraScale, type LoraMatrix, type LoraSettings, type LoraTarget } from './lora-config.ts';
import { FrozenBase } from './frozen-base.ts';
import { loraMerge, loraMergeInPlace, loraRowsBackward, type LoraShape } from './lora-math.ts';
import { attentionShape } from '../network/config.ts';
import type { LayerMatrix, WeightGradHook } from '../network/transformer.ts';
import { MergedLayers, type MergeProduct } from './merged-layers.ts';

/**
 * Where the merged weights live: 'merged', the network's f32 parameters (every reader of the
 * network sees the policy); 'base', nowhere: the frozen base of every layer product in bf16 and
 * each layer merged when it is read (merged-layers.ts).
 */
export type LoraStorage = 'merged' | 'base';

/** One adapted matrix with where its A, B and frozen base live. */
export interface AdaptedMatrix extends LoraMatrix {
  aOffset: number; // into params: A [r, I]
  bOffset: number; // into params: B [O, r]
  baseOffset: number; // into base: W0 [O, I]
}

export class LoraAdapter {
  readonly settings: LoraSettings;
  readonly matrices: readonly AdaptedMatrix[];
  readonly params: Float32Array; // [sum r (I + O)]
  readonly grads: Float32Array; // [sum r (I + O)]
  /** The base's adapted matrices, frozen: [sum O I]; in storage 'base', every layer product. */
  readonly base: FrozenBase;
  readonly optimizer: AdamW;
  readonly storage: LoraStorage;
  /** Storage 'base': the layer products' base and the materialized layer; null otherwise. */
  readonly layers: MergedLayers | null;
  private readonly net: LlamaNetwork;
  private readonly scratch: Float32Array; // [max O I] s B A (storage 'merged')
  private readonly widened: Float32Array; // [max O I] a bf16 base matrix as f32
  /** The adapted matrices of each layer product ("layer.matrix"), with their columns in its output. */
  private readonly byProduct = new Map<string, (AdaptedMatrix & { col: number; ld: number })[]>();
  private t = new Float32Array(0); // [N r] dY B
  private u = new Float32Array(0); // [N r] X A^T

  /**
   * Adapters on `net`, whose current weights become the frozen base. A starts as PEFT's default
   * (Kaiming-uniform, bound 1 / sqrt(I)) and B at zero, so the merged weights are the base
   * exactly until the first step.
   */
  constructor({
    net,
    settings,
    optim,
    rng,
    storage = 'merged',
  }: {
    net: LlamaNetwork;
    settings: LoraSettings;
    optim: OptimizerConfig;
    rng: Rng;
    storage?: LoraStorage;
  }) {
    this.net = net;
    this.settings = settings;
    this.storage = storage;
    this.layers = storage === 'base' ? new MergedLayers(net) : null;
    const layers = this.layers;
    const r = settings.rank;
    let at = 0;
    let baseAt = 0;
    this.matrices = loraMatrices({ specs: net.specs, cfg: net.cfg, targets: settings.targets }).map((m) => {
      // In storage 'base' the frozen copy is every layer product's; a matrix's rows sit inside its product's.
      const pl = layers?.places.flat().find((p) => p.offset <= m.offset && m.offset < p.offset + p.size);
      const baseOffset = pl ? pl.baseOffset + (m.offset - pl.offset) : baseAt;
      const placed = { ...m, aOffset: at, bOffset: at + r * m.in, baseOffset };
      at += r * (m.in + m.out);
      baseAt += m.out * m.in;
      return placed;
    });
    this.params = new Float32Array(at);
    this.grads = new Float32Array(at);
    const largest = Math.max(0, ...this.matrices.map((m) => m.out * m.in));
    this.scratch = new Float32Array(layers ? 0 : largest); // storage 'base' merges in place
    this.base =
      layers?.base ?? new FrozenBase(this.matrices.map((m) => net.params.subarray(m.offset, m.offset + m.out * m.in)));
    this.widened = new Float32Array(!layers && this.base.format === 'bf16' ? largest : 0);
    for (const m of this.matrices) {
      const bound = 1 / Math.sqrt(m.in);
      const a = this.a(m);
      for (let k = 0; k < a.length; k++) a[k] = (rng.next() * 2 - 1) * bound;
    }
    for (const m of this.matrices) {
      const { product, col, ld } = productColumns(net, m);
      const key = `${m.module.split('.')[2]}.${product}`;
      this.byProduct.set(key, [...(this.byProduct.get(key) ?? []), { ...m, col, ld }]);
    }
    // The layers' weight gradients come to the adapters; the base's are never formed.
    net.weightGrad = (o) => this.accumulate(o);
    const ranges = this.matrices.map((m) => ({ offset: m.aOffset, size: r * (m.in + m.out), decay: true }));
    this.optimizer = new AdamW({ cfg: optim, size: at, ranges });
    if (layers) {
      // The f32 layer products go; the trunk reads each layer merged from the base from now on.
      const merge: MergeProduct = (o) => this.mergeProduct(o);
      net.releaseRanges(layers.ranges());
      net.layerSource = (l) => layers.layer(l, net.version, merge);
    }
  }

  /** Storage 'base': s B A of the adapted matrices of one layer product added onto `out` (W0). */
  private mergeProduct({ layer, product, out }: Parameters<MergeProduct>[0]): void {
    const place = this.layers!.places[layer]!;
    for (const m of this.byProduct.get(`${layer}.${product}`) ?? []) {
      const pl = place.find((p) => p.offset <= m.offset && m.offset < p.offset + p.size)!;
      const w = out.subarray(m.offset - pl.offset, m.offset - pl.offset + m.out * m.in);
      loraMergeInPlace({ w, a: this.a(m), b: this.b(m), shape: this.shape(m) });
    }
  }

  /** A [r, I] of matrix m (a view of params, or of `buf` laid out the same way). */
  a(m: AdaptedMatrix, buf: Float32Array = this.params): Float32Array {
    return buf.subarray(m.aOffset, m.aOffset + this.settings.rank * m.in);
  }

  /** B [O, r] of matrix m. */
  b(m: AdaptedMatrix, buf: Float32Array = this.params): Float32Array {
    return buf.subarray(m.bOffset, m.bOffset + m.out * this.settings.rank);
  }

  private shape(m: AdaptedMatrix): LoraShape {
    return { o: m.out, i: m.in, r: this.settings.rank, scale: loraScale(this.settings) };
  }

  /**
   * Writes W0 + s B A of every adapted matrix into the network (after a step or a load); in
   * storage 'base', marks the weights changed so each layer is merged again when read.
   */
  merge(): void {
    const { net } = this;
    if (this.layers) {
      net.markWeightsChanged(); // each layer is merged when it is next read
      return;
    }
    for (const m of this.matrices) {
      loraMerge({
        w: net.params.subarray(m.offset, m.offset + m.out * m.in),
        base: this.base.read(m.baseOffset, m.out * m.in, this.widened),
        a: this.a(m),
        b: this.b(m),
        scratch: this.scratch,
        shape: this.shape(m),
      });
    }
    net.markWeightsChanged(); // the sampler's caches start over with the new policy version
  }

  /**
   * Runs `fn` while the network's parameters hold the frozen base W0 in every adapted matrix (the
   * PyTorch trainer's init sends the base from them, without a second copy of the model), then
   * merges again. The merge is deterministic, so the weights after are those before, bit for bit.
   */
  withBaseWeights<T>(fn: () => T): T {
    const { net } = this;
    if (this.layers) throw new Error("LoRA storage 'base' holds no f32 weights to lend; use storage 'merged'");
    for (const m of this.matrices) net.params.set(this.base.read(m.baseOffset, m.out * m.in, this.widened), m.offset);
    try {
      return fn();
    } finally {
      this.merge();
    }
  }

  /**
   * After the network's backward, which gave A and B their gradients (accumulate): one AdamW step
   * on them (the clipping norm is theirs), the merge, and the network's own gradients (the frozen
   * norms' and embeddings') dropped.
   */
  step(): { gradNorm: number; lr: number } {
    this.net.zeroGrad();
    const result = this.optimizer.step(this.params, this.grads);
    this.merge();
    return result;
  }

  /**
   * The network's weight-gradient hook (transformer.ts WeightGradHook): the gradients of the A and
   * B of every adapted matrix inside the product, from its rows (lora-math.ts loraRowsBackward).
   */
  private accumulate({ layer, matrix, dout, inp, n }: Parameters<WeightGradHook>[0]): void {
    const r = this.settings.rank;
    if (this.t.length < n * r) {
      this.t = new Float32Array(n * r);
      this.u = new Float32Array(n * r);
    }
    for (const m of this.byProduct.get(`${layer}.${matrix}`) ?? []) {
      loraRowsBackward({
        dout,
        ld: m.ld,
        col: m.col,
        inp,
        a: this.a(m),
        b: this.b(m),
        da: this.a(m, this.grads),
        db: this.b(m, this.grads),
        t: this.t,
        u: this.u,
        n,
        shape: this.shape(m),
      });
    }
  }
}

/**
 * Which layer product holds matrix m and where: q/k/v_proj are columns of the fused [N, Q3]
 * output and gate/up_proj of the [N, 2F] one (weights.ts), o_proj and down_proj alone.
 */
function productColumns(net: LlamaNetwork, m: LoraMatrix): { product: LayerMatrix; col: number; ld: number } {
  const { qDim, kvDim, qkvDim } = attentionShape(net.cfg);
  const f = net.cfg.mlpHidden;
  const c = net.cfg.dModel;
  const at: Record<LoraTarget, { product: LayerMatrix; col: number; ld: number }> = {
    q_proj: { product: 'qkv', col: 0, ld: qkvDim },
    k_proj: { product: 'qkv', col: qDim, ld: qkvDim },
    v_proj: { product: 'qkv', col: qDim + kvDim, ld: qkvDim },
    o_proj: { product: 'o', col: 0, ld: c },
    gate_proj: { product: 'gateUp', col: 0, ld: 2 * f },
    up_proj: { product: 'gateUp', col: f, ld: 2 * f },
    down_proj: { product: 'down', col: 0, ld: c },
  };
  return at[m.target];
}
