/**
 * LoRA adapters on a frozen base, trained through a LlamaNetwork that runs on the merged weights.
 *
 * The network's parameters always hold W = W0 + s B A for every adapted matrix (and the base
 * itself elsewhere), so its forward, backward, sampler and checkpoints read one set of weights and
 * sampling runs at the full model's speed: the merge happens once per policy version, in step().
 * The network's backward leaves dW in its gradients; step() turns them into the adapters'
 * gradients (lora-math.ts), takes one AdamW step on A and B only, re-merges and drops every other
 * gradient (the base is frozen). Memory: a frozen copy of the adapted matrices in place of the
 * full model's two AdamW moments (docs/lora.md).
 *
 * Layout of `params` (and `grads`): matrix by matrix in loraMatrices order, A [r, I] then B [O, r].
 */
import { AdamW } from '../../optim/adamw.ts';
import type { OptimizerConfig } from '../../optim/config.ts';
import type { Rng } from '../../util/random.ts';
import type { LlamaNetwork } from '../network/network.ts';
import { loraMatrices, loraScale, type LoraMatrix, type LoraSettings } from './lora-config.ts';
import { loraBackward, loraMerge, type LoraShape } from './lora-math.ts';

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
  /** The base's adapted matrices, frozen: [sum O I]. */
  readonly base: Float32Array;
  readonly optimizer: AdamW;
  private readonly net: LlamaNetwork;
  private readonly scratch: Float32Array; // [max O I]

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
  }: {
    net: LlamaNetwork;
    settings: LoraSettings;
    optim: OptimizerConfig;
    rng: Rng;
  }) {
    this.net = net;
    this.settings = settings;
    const r = settings.rank;
    let at = 0;
    let baseAt = 0;
    this.matrices = loraMatrices({ specs: net.specs, cfg: net.cfg, targets: settings.targets }).map((m) => {
      const placed = { ...m, aOffset: at, bOffset: at + r * m.in, baseOffset: baseAt };
      at += r * (m.in + m.out);
      baseAt += m.out * m.in;
      return placed;
    });
    this.params = new Float32Array(at);
    this.grads = new Float32Array(at);
    this.base = new Float32Array(baseAt);
    this.scratch = new Float32Array(Math.max(0, ...this.matrices.map((m) => m.out * m.in)));
    for (const m of this.matrices) {
      this.base.set(net.params.subarray(m.offset, m.offset + m.out * m.in), m.baseOffset);
      const bound = 1 / Math.sqrt(m.in);
      const a = this.a(m);
      for (let k = 0; k < a.length; k++) a[k] = (rng.next() * 2 - 1) * bound;
    }
    const ranges = this.matrices.map((m) => ({ offset: m.aOffset, size: r * (m.in + m.out), decay: true }));
    this.optimizer = new AdamW({ cfg: optim, size: at, ranges });
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

  /** Writes W0 + s B A of every adapted matrix into the network (after a step or a load). */
  merge(): void {
    const { net } = this;
    for (const m of this.matrices) {
      loraMerge({
        w: net.params.subarray(m.offset, m.offset + m.out * m.in),
        base: this.base.subarray(m.baseOffset, m.baseOffset + m.out * m.in),
        a: this.a(m),
        b: this.b(m),
        scratch: this.scratch,
        shape: this.shape(m),
      });
    }
    net.markWeightsChanged(); // the sampler's caches start over with the new policy version
  }

  /**
   * After the network's backward: the adapters' gradients from dW, one AdamW step on them (the
   * clipping norm is theirs), the merge, and every gradient of the network dropped.
   */
  step(): { gradNorm: number; lr: number } {
    this.collectGrads();
    const result = this.optimizer.step(this.params, this.grads);
    this.merge();
    return result;
  }

  /** Adds the adapters' gradients from the network's dW, then drops the network's gradients. */
  collectGrads(): void {
    const { net } = this;
    for (const m of this.matrices) {
      loraBackward({
        dw: net.grads.subarray(m.offset, m.offset + m.out * m.in),
        a: this.a(m),
        b: this.b(m),
        da: this.a(m, this.grads),
        db: this.b(m, this.grads),
        shape: this.shape(m),
      });
    }
    net.zeroGrad();
  }
}
