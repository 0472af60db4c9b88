import type { OptimizerConfig } from './config.ts';
import { gradNorm } from './clip.ts';
import { learningRate } from './schedule.ts';

/** A contiguous range of the flat parameter buffer and whether weight decay applies to it. */
export interface DecayRange {
  offset: number;
  size: number;
  decay: boolean;
  /**
   * Not trained: step() never reads or writes the range in params, grads, m or v, so pages of it
   * nobody else writes are never mapped (a critic's frozen embedding, network.ts).
   */
  frozen?: boolean;
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
  /** [offset, end, decay] runs covering [0, P) in order: which parameters weight decay applies to. */
  private readonly runs: readonly (readonly [number, number, boolean])[];

  constructor({ cfg, size, ranges }: { cfg: OptimizerConfig; size: number; ranges: readonly DecayRange[] }) {
    this.cfg = cfg;
    this.state = { step: 0, m: new Float32Array(size), v: new Float32Array(size) };
    this.runs = withoutFrozen(decayRuns(ranges, size), ranges);
  }

  /**
   * Clips grads, updates params, zeroes grads. A non-finite gradient norm skips the update (and
   * does not advance the schedule) so one bad batch cannot poison the weights; the caller sees
   * the NaN/Infinity in gradNorm and can log it.
   */
  step(params: Float32Array, grads: Float32Array): { gradNorm: number; lr: number } {
    const { betas, eps, weightDecay, gradClip } = this.cfg;
    // clip.ts clipGradNorm's scaling, applied as each gradient is read so frozen ranges stay untouched
    // (the same f32 value as scaling in place: Math.fround is the store's rounding).
    const norm = gradNorm(grads);
    const k = gradClip > 0 && norm > gradClip ? gradClip / (norm + 1e-6) : 1;
    const lr = learningRate(this.cfg, this.state.step);
    if (!Number.isFinite(norm)) {
      for (const [start, end] of this.runs) grads.fill(0, start, end);
      return { gradNorm: norm, lr };
    }
    this.state.step++;
    const t = this.state.step;
    const [b1, b2] = betas;
    const c1 = 1 / (1 - Math.pow(b1, t));
    const c2 = 1 / (1 - Math.pow(b2, t));
    const { m, v } = this.state;
    const wd = lr * weightDecay;
    for (const [start, end, decay] of this.runs) {
      for (let i = start; i < end; i++) {
        const g = k === 1 ? grads[i]! : Math.fround(grads[i]! * k);
        const mi = b1 * m[i]! + (1 - b1) * g;
        const vi = b2 * v[i]! + (1 - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        let p = params[i]!;
        if (decay) p -= wd * p;
        params[i] = p - (lr * (mi * c1)) / (Math.sqrt(vi * c2) + eps);
        grads[i] = 0;
      }
    }
    return { gradNorm: norm, lr };
  }
}

/** The runs less every frozen range (runs and ranges both in parameter order after sorting). */
function withoutFrozen(
  runs: (readonly [number, number, boolean])[],
  ranges: readonly DecayRange[],
): (readonly [number, number, boolean])[] {
  const frozen = ranges.filter((r) => r.frozen && r.size > 0);
  if (frozen.length === 0) return runs;
  let out = runs;
  for (const f of frozen) {
    const lo = f.offset;
    const hi = f.offset + f.size;
    out = out.flatMap(([a, b, d]) => {
      const keep: (readonly [number, number, boolean])[] = [];
      if (a < Math.min(b, lo)) keep.push([a, Math.min(b, lo), d]);
      if (Math.max(a, hi) < b) keep.push([Math.max(a, hi), b, d]);
      return keep;
    });
  }
  return out;
}

/**
 * The decay ranges as runs covering [0, size): a per-parameter mask would be a byte per parameter
 * written at construction (600 MB and seconds of page faults for a 0.6B model that only samples).
 * Where ranges overlap, decay wins, as it did per parameter.
 */
function decayRuns(ranges: readonly DecayRange[], size: number): (readonly [number, number, boolean])[] {
  const decayed = ranges
    .filter((r) => r.decay && r.size > 0)
    .map((r) => [Math.max(0, r.offset), Math.min(size, r.offset + r.size)] as const)
    .sort((a, b) => a[0] - b[0]);
  const runs: [number, number, boolean][] = [];
  let at = 0;
  for (const [lo, hi] of decayed) {
    if (hi <= at) continue;
    if (lo > at) runs.push([at, lo, false]);
    const start = Math.max(lo, at);
    const last = runs[runs.length - 1];
    if (last?.[2] && last[1] === start) last[1] = hi;
    else runs.push([start, hi, true]);
    at = hi;
  }
  if (at < size) runs.push([at, size, false]);
  return runs;
}
