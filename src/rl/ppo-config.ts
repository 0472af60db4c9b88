/**
 * PPO update settings (method §5–6). The schema is the single source of truth, for the RL API and
 * for TrainConfig's `ppo` block; parse({}) gives the paper's defaults (clip 0.2, KL 0, 2 critic
 * updates per policy update, token-level loss, summary training on, whitening on) except the
 * critic warm-up, which is sized for runs of tens of iterations (see criticWarmupIterations).
 */
import { z } from 'zod';
import { RlInputError } from './errors.ts';
import { LOSS_AGGREGATIONS } from './aggregate-loss.ts';
import { WHITENING_MODES, type WhiteningMode } from './whitening.ts';
import { SEGMENT_WEIGHTINGS, type SegmentWeighting } from './segment-weights.ts';
import { OFF_POLICY_CORRECTIONS, TIS_LEVELS, type OffPolicyOptions } from './off-policy.ts';

/** slime's --tis-clip default; also the decoupled correction's cap. */
export const DEFAULT_TIS_CAP = 2;

export const ppoConfigSchema = z
  .object({
    /** E: passes over the batch per iteration. */
    epochs: z.number().int().min(1).default(1),
    /** Token budget of one minibatch (whole segments; a longer segment goes alone). */
    minibatchTokens: z.number().int().min(1).default(4096),
    /** eps_low: rho clipped from below at 1 - clipLow. */
    clipLow: z.number().min(0).max(1).default(0.2),
    /** eps_high: rho clipped from above at 1 + clipHigh. */
    clipHigh: z.number().min(0).default(0.2),
    /** eps_v for the clipped value loss; null turns value clipping off. */
    valueClip: z.number().min(0).nullable().default(0.2),
    klCoef: z.number().min(0).default(0),
    entropyCoef: z.number().min(0).default(0),
    lossAggregation: z.enum(LOSS_AGGREGATIONS as ['token-mean', 'segment-mean']).default('token-mean'),
    /** false: summary tokens leave the policy loss M; the critic still trains on them (method §5). */
    trainSummaries: z.boolean().default(true),
    /**
     * Iterations 1 .. n train the critic only (method §6). Ignored when no critic is given. The
     * paper warms up for 50 iterations of a long run; the runs here last 20-40 iterations, where
     * 50 would never train the policy, so the default is 2 (what the presets use).
     */
    criticWarmupIterations: z.number().int().min(0).default(2),
    /** Critic optimizer steps per minibatch for each policy step (method §6, paper: 2). */
    criticUpdatesPerPolicyUpdate: z.number().int().min(1).default(2),
    /**
     * Whiten advantages before the epochs (method §4): true = over the batch's optimized tokens,
     * false = not at all, or a mode of whitening.ts ('none' | 'batch' | 'per-kind' | 'per-position').
     */
    whitenAdvantages: z
      .union([z.boolean(), z.enum(WHITENING_MODES as [WhiteningMode, ...WhiteningMode[]])])
      .default(true),
    /**
     * Per-segment policy-loss weights (segment-weights.ts, docs/credit.md): 'inverse-count' weighs
     * each segment 1/N of its episode's N, renormalised to mean 1. Absent: 'uniform' (method §5).
     */
    segmentWeights: z.enum(SEGMENT_WEIGHTINGS as [SegmentWeighting, ...SegmentWeighting[]]).optional(),
    /**
     * Early stop on KL (an addition to docs/method.md's PPO, off by default; Stable-Baselines3's
     * target_kl): before each policy step, if the minibatch's approx KL from the sampling policy
     * exceeds 1.5 x targetKl, that step and the rest of the iteration's policy steps are skipped.
     * The critic keeps training. null: off.
     */
    targetKl: z.number().positive().nullable().default(null),
    /**
     * A batch whose episodes all have the same reward (an addition to docs/method.md, off by
     * default): 'update' (the method) updates the policy as on any batch; 'skip-policy' trains
     * only the critic on it. Such a batch says nothing about which actions were better: its
     * advantages are the critic's error, and whitening scales that error up to unit size, a
     * push in random directions (decisions/0049). DAPO's dynamic sampling drops such groups.
     * Absent: 'update' (absent rather than defaulted, so run directories made before it still
     * match their preset).
     */
    uniformRewards: z.enum(['update', 'skip-policy']).optional(),
    /**
     * Run an execution segment and the summary segment that repeats its window as one sequence in
     * the forward and backward passes (same losses and gradients up to float rounding, about 40%
     * fewer tokens; the pair is one unit of the minibatch split). false: every segment alone.
     */
    mergePrefixes: z.boolean().default(true),
    /**
     * How the surrogate of a segment sampled by other weights than the trainer's old policy is
     * corrected (off-policy.ts, docs/async.md): 'none' | 'tis' | 'decoupled'. Absent: 'none'.
     */
    offPolicy: z.enum(OFF_POLICY_CORRECTIONS).optional(),
    /** The correction's cap on exp(logp_old - logp_b) (absent: 2). */
    tisCap: z.number().positive().optional(),
    /** 'token' (absent) or 'sequence': one TIS weight per token or per segment ('tis' only). */
    tisLevel: z.enum(TIS_LEVELS).optional(),
  })
  .strict();

export type PpoConfig = z.infer<typeof ppoConfigSchema>;
export type PpoConfigInput = z.input<typeof ppoConfigSchema>;

/** Parses a PPO config; unknown keys and bad values give one readable error. */
export function parsePpoConfig(input: unknown): PpoConfig {
  const r = ppoConfigSchema.safeParse(input ?? {});
  if (!r.success) throw new RlInputError(`invalid PPO config: ${z.prettifyError(r.error)}`);
  if (r.data.tisLevel === 'sequence' && r.data.offPolicy !== 'tis')
    throw new RlInputError(
      `invalid PPO config: tisLevel 'sequence' applies to offPolicy 'tis' only (got '${r.data.offPolicy ?? 'none'}')`,
    );
  return r.data;
}

/** The config's correction with its defaults filled in. */
export function offPolicyOf(config: Pick<PpoConfig, 'offPolicy' | 'tisCap' | 'tisLevel'>): OffPolicyOptions {
  return {
    correction: config.offPolicy ?? 'none',
    cap: config.tisCap ?? DEFAULT_TIS_CAP,
    level: config.tisLevel ?? 'token',
  };
}
