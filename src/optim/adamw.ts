import type { OptimizerConfig } from './config.ts';
import { clipGradNorm } from './clip.ts';
import { learningRate } from './schedule.ts';

/** A contiguous range of the flat parameter buffer and whether weight decay applies to it. */
export interface DecayRange {
  offset: number;
  size: number;
  decay: boolean;
}

/** Serializable optimizer state (checkpoint.ts saves m and v as tensors). */
export interface AdamWState {
  step: number;
  m: Float32Array; // [P]
  v: Float32Array; // [P]
}

/**
 * AdamW (Loshchilov & Hutter) over one flat parameter buffer: decoupled weight decay applied only
 * to ranges marked decay (matrices and embeddings; not norms or biases), global-norm clipping
 * first, learning rate from the warm-up + cosine schedule.
 */
export class AdamW {
  readonly cfg: OptimizerConfig;
  readonly state: AdamWState;
  private readonly decayMask: Uint8Array; // [P]

  constructor({ cfg, size, ranges }: { cfg: OptimizerConfig; size: number; ranges: readonly DecayRange[] }) {
    this.cfg = cfg;
    this.state = { step: 0, m: new Float32Array(size), v: new Float32Array(size) };
    this.decayMask = new Uint8Array(size);
    for (const r of ranges) if (r.decay) this.decayMask.fill(1, r.offset, r.offset + r.size);
  }

  /**
   * Clips grads, updates params, zeroes grads. A non-finite gradient norm skips the update (and
   * does not advance the schedule) so one bad batch cannot poison the weights; the caller sees
   * the NaN/Infinity in gradNorm and can log it.
   */
  step(params: Float32Array, grads: Float32Array): { gradNorm: number; lr: number } {
    const { betas, eps, weightDecay, gradClip } = this.cfg;
    const norm = clipGradNorm(grads, gradClip);
    const lr = learningRate(this.cfg, this.state.step);
    if (!Number.isFinite(norm)) {
      grads.fill(0);
      return { gradNorm: norm, lr };
    }
    this.state.step++;
    const t = this.state.step;
    const [b1, b2] = betas;
    const c1 = 1 / (1 - Math.pow(b1, t));
    const c2 = 1 / (1 - Math.pow(b2, t));
    const { m, v } = this.state;
    const mask = this.decayMask;
    const wd = lr * weightDecay;
    for (let i = 0; i < params.length; i++) {
      const g = grads[i]!;
      const mi = b1 * m[i]! + (1 - b1) * g;
      const vi = b2 * v[i]! + (1 - b2) * g * g;
      m[i] = mi;
      v[i] = vi;
      let p = params[i]!;
      if (mask[i] === 1) p -= wd * p;
      params[i] = p - (lr * (mi * c1)) / (Math.sqrt(vi * c2) + eps);
      grads[i] = 0;
    }
    return { gradNorm: norm, lr };
  }
}
