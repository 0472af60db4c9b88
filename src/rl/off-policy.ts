/**
 * Off-policy corrections for segments the trainer did not sample itself (docs/async.md): with a
 * staleness bound S > 0 a segment may have been sampled by older weights (the behaviour policy
 * b) than the trainer's old policy (the weights of this iteration, whose recomputed log-probs
 * `logp_old` are PPO's reference, method §6). A registry, verl style: each correction turns the
 * behaviour and old log-probs of a segment into a detached per-token weight w_t that multiplies
 * the token's clipped surrogate (policy-loss.ts). The KL and entropy terms, the token-level
 * aggregation and the cross-trajectory advantages are left as they are.
 *
 *   none       w_t = 1 (PPO as in method §5; stale tokens are treated as on-policy)
 *   tis        truncated importance sampling (verl, slime --use-tis):
 *              token level    w_t = min(cap, exp(logp_old_t - logp_b_t))
 *              sequence level w_t = min(cap, exp(sum_t in segment (logp_old_t - logp_b_t)))
 *   decoupled  decoupled PPO (AReaL): the clip stays around the proximal policy (logp_old, the
 *              trainer's recomputation) and the surrogate is weighted by exp(logp_old_t - logp_b_t);
 *              a token whose weight exceeds cap is left out (w_t = 0), AReaL's behav_imp_weight_cap.
 *
 * A token without a behaviour log-prob (NaN: a scripted sampler) keeps w_t = 1: there is nothing
 * to correct against. Outside the mask w_t = 1 and nothing is counted.
 */
import { RlInputError, requireSameLength } from './errors.ts';

export const OFF_POLICY_CORRECTIONS = ['none', 'tis', 'decoupled'] as const;
export type OffPolicyCorrection = (typeof OFF_POLICY_CORRECTIONS)[number];
export const TIS_LEVELS = ['token', 'sequence'] as const;
export type TisLevel = (typeof TIS_LEVELS)[number];

export interface OffPolicyOptions {
  correction: OffPolicyCorrection;
  cap: number; // > 0: TIS truncates at it, decoupled leaves tokens above it out
  level: TisLevel; // TIS only: one weight per token or one per segment
}

export interface ImportanceWeights {
  weights: Float32Array; // [T] the detached weight on each token's surrogate
  raw: Float32Array; // [T] exp(logp_old - logp_b) before the cap; NaN where not measured
  capped: Uint8Array; // [T] 1 where the cap changed the weight
}

type WeightsOf = (options: {
  old: Float32Array; // [T] trainer's recomputed log-probs
  behaviour: Float32Array; // [T] sampler's log-probs, NaN where unknown
  mask: Uint8Array; // [T]
  cap: number;
  level: TisLevel;
}) => ImportanceWeights;

/** exp(old - behaviour) on masked tokens with a known behaviour log-prob, NaN elsewhere. */
function rawRatios(old: Float32Array, behaviour: Float32Array, mask: Uint8Array): Float32Array {
  const raw = new Float32Array(mask.length).fill(Number.NaN);
  for (let t = 0; t < mask.length; t++)
    if (mask[t] === 1 && !Number.isNaN(behaviour[t]!)) raw[t] = Math.exp(old[t]! - behaviour[t]!);
  return raw;
}

const none: WeightsOf = ({ old, behaviour, mask }) => ({
  weights: new Float32Array(mask.length).fill(1),
  raw: rawRatios(old, behaviour, mask),
  capped: new Uint8Array(mask.length),
});

const tis: WeightsOf = ({ old, behaviour, mask, cap, level }) => {
  const raw = rawRatios(old, behaviour, mask);
  const weights = new Float32Array(mask.length).fill(1);
  const capped = new Uint8Array(mask.length);
  if (level === 'token') {
    for (let t = 0; t < mask.length; t++) {
      if (Number.isNaN(raw[t]!)) continue;
      weights[t] = Math.min(cap, raw[t]!);
      capped[t] = raw[t]! > cap ? 1 : 0;
    }
    return { weights, raw, capped };
  }
  // Sequence level: the product of the token ratios, i.e. exp of the summed log-ratios (float64).
  let logSum = 0;
  let known = false;
  for (let t = 0; t < mask.length; t++)
    if (!Number.isNaN(raw[t]!)) {
      logSum += old[t]! - behaviour[t]!;
      known = true;
    }
  if (!known) return { weights, raw, capped };
  const w = Math.exp(logSum);
  for (let t = 0; t < mask.length; t++) {
    if (mask[t] !== 1) continue;
    weights[t] = Math.min(cap, w);
    capped[t] = w > cap ? 1 : 0;
  }
  return { weights, raw, capped };
};

const decoupled: WeightsOf = ({ old, behaviour, mask, cap }) => {
  const raw = rawRatios(old, behaviour, mask);
  const weights = new Float32Array(mask.length).fill(1);
  const capped = new Uint8Array(mask.length);
  for (let t = 0; t < mask.length; t++) {
    if (Number.isNaN(raw[t]!)) continue;
    const over = raw[t]! > cap;
    weights[t] = over ? 0 : raw[t]!;
    capped[t] = over ? 1 : 0;
  }
  return { weights, raw, capped };
};

export const OFF_POLICY_WEIGHTS: Readonly<Record<OffPolicyCorrection, WeightsOf>> = { none, tis, decoupled };

/** The per-token weights of every segment under one correction. */
export function importanceWeights(options: {
  oldLogprobs: Float32Array[]; // [T] per segment
  behaviourLogprobs: Float32Array[]; // [T] per segment, NaN where unknown
  masks: Uint8Array[]; // [T] per segment
  offPolicy: OffPolicyOptions;
}): ImportanceWeights[] {
  const { correction, cap, level } = options.offPolicy;
  const weightsOf = OFF_POLICY_WEIGHTS[correction];
  if (!weightsOf)
    throw new RlInputError(
      `unknown off-policy correction '${String(correction)}'; valid: ${OFF_POLICY_CORRECTIONS.join(', ')}`,
    );
  if (!(cap > 0) || !Number.isFinite(cap))
    throw new RlInputError(`off-policy cap must be a finite number > 0, got ${cap}`);
  if (level === 'sequence' && correction !== 'tis')
    throw new RlInputError(`off-policy level 'sequence' applies to 'tis' only (got '${correction}')`);
  return options.masks.map((mask, s) => {
    const old = options.oldLogprobs[s]!;
    const behaviour = options.behaviourLogprobs[s]!;
    requireSameLength({ a: old, b: mask, what: `off-policy segment ${s} oldLogprobs vs mask` });
    requireSameLength({ a: behaviour, b: mask, what: `off-policy segment ${s} behaviourLogprobs vs mask` });
    return weightsOf({ old, behaviour, mask, cap, level });
  });
}

/**
 * Metrics of the raw weights exp(logp_old - logp_b) over masked tokens with a behaviour log-prob:
 * their mean and max, and the share of them the cap changed. Zeros when none was measured.
 */
export function importanceStats(weights: readonly ImportanceWeights[]): {
  mean: number;
  max: number;
  cappedShare: number;
} {
  let n = 0;
  let sum = 0;
  let max = 0;
  let capped = 0;
  for (const w of weights)
    for (let t = 0; t < w.raw.length; t++) {
      const r = w.raw[t]!;
      if (Number.isNaN(r)) continue;
      n++;
      sum += r;
      max = Math.max(max, r);
      capped += w.capped[t]!;
    }
  return n > 0 ? { mean: sum / n, max, cappedShare: capped / n } : { mean: 0, max: 0, cappedShare: 0 };
}
