/**
 * Output head statistics: per row, the probability distribution, the log-prob of a target token
 * and the entropy (PPO needs both, trainable.ts). N = rows, V = vocabulary.
 * Computed in float64 accumulators so training log-probs match the sampler's to ~1e-6.
 */
import { nativeOps } from './native-ops.ts';
import type { LogprobForwardArgs, LogprobBackwardArgs } from './op-args.ts';

/** The native twin when available (native-ops.ts: bit-identical, both threads); logprobForwardTs otherwise. */
export function logprobForward(a: LogprobForwardArgs): void {
  if (nativeOps?.logprobForward) nativeOps.logprobForward(a);
  else logprobForwardTs(a);
}

export function logprobForwardTs({ probs, targets, logprobs, entropies, n, v }: LogprobForwardArgs): void {
  for (let r = 0; r < n; r++) {
    const o = r * v;
    let mx = -Infinity;
    for (let j = 0; j < v; j++) if (probs[o + j]! > mx) mx = probs[o + j]!;
    let sum = 0;
    for (let j = 0; j < v; j++) sum += Math.exp(probs[o + j]! - mx);
    const lse = mx + Math.log(sum);
    let ent = 0;
    const t = targets[r]!;
    logprobs[r] = t >= 0 ? probs[o + t]! - lse : 0;
    for (let j = 0; j < v; j++) {
      const lp = probs[o + j]! - lse;
      const p = Math.exp(lp);
      ent -= p * lp;
      probs[o + j] = p;
    }
    entropies[r] = ent;
  }
}

/**
 * d logp_y / dz_j = [j = y] - p_j;  dH / dz_j = -p_j (log p_j + H).
 */
export function logprobBackward(a: LogprobBackwardArgs): void {
  const { dlogits, probs, targets, dlogprobs, dentropies, entropies, n, v } = a;
  for (let r = 0; r < n; r++) {
    const o = r * v;
    const t = targets[r]!;
    const g = t >= 0 ? dlogprobs[r]! : 0;
    const e = dentropies ? dentropies[r]! : 0;
    if (g === 0 && e === 0) continue;
    const h = entropies[r]!;
    for (let j = 0; j < v; j++) {
      const p = probs[o + j]!;
      let d = -g * p;
      if (e !== 0 && p > 0) d -= e * p * (Math.log(p) + h);
      dlogits[o + j]! += d;
    }
    if (t >= 0) dlogits[o + t]! += g;
  }
}
