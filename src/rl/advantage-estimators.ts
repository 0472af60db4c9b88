/**
 * Advantage-estimator registry (house style §6: registries, not branches). Each estimator maps a
 * batch of episodes to per-token advantages and critic returns, 0 outside the loss mask.
 *
 * - 'compaction-gae' (method §4): per-episode local GAE + cross-trajectory correction; optionally
 *   another split of R over the segments (segment-rewards.ts: R / K, gamma^(K-k) R).
 * - 'full-trajectory-gae' (docs/credit.md): one GAE chain over the episode's generated tokens in
 *   time order, each segment bootstrapped from the next one's first value (full-trajectory-gae.ts).
 * - 'broadcast' (method §7, critic-free): the episode reward normalized within its group of
 *   episodes sharing a taskKey, (R - mean) / (std + eps), copied to every generated token of every
 *   segment. std is the sample std (divide by N - 1, as torch.std in GRPO-style code). A group of
 *   one episode has no baseline: it uses mean 0 and std 1 (so A = R / (1 + eps), as verl's GRPO
 *   does); batch whitening then centres those. Returns are R at every generated token (the
 *   undiscounted Monte-Carlo return), so a critic can still be trained if one is present.
 */
import { z } from 'zod';
import { RlInputError, requireBinaryMask, requireFinite } from './errors.ts';
import { computeSegmentAdvantages, generatedPositions, type SegmentAdvantageInput } from './segment-advantages.ts';
import { fullTrajectoryAdvantages } from './full-trajectory-gae.ts';
import { SEGMENT_REWARD_MODES, segmentRewards, type SegmentRewardMode } from './segment-rewards.ts';

export interface EstimatorSegment {
  kind: SegmentAdvantageInput['kind'];
  lossMask: Uint8Array; // [T]
  values?: Float32Array; // [T]; required by estimators with needsCritic
}

export interface EpisodeAdvantageInput {
  taskKey: string; // episodes with the same key form a group (broadcast)
  reward: number;
  segments: EstimatorSegment[]; // in time order
}

export interface EstimatorOutput {
  advantages: Float32Array[][]; // [episode][segment] -> [T]
  returns: Float32Array[][]; // [episode][segment] -> [T]
}

export interface AdvantageEstimator<C extends z.ZodType = z.ZodType> {
  readonly needsCritic: boolean;
  /** Strict schema with defaults; parse({}) gives the paper's settings. */
  readonly configSchema: C;
  estimate(options: { episodes: EpisodeAdvantageInput[]; config: z.infer<C> }): EstimatorOutput;
}

const lambdaSchema = z.union([
  z.number().min(0).max(1),
  z.object({ lengthAdaptiveAlpha: z.number().positive() }).strict(),
]);

export const compactionGaeConfigSchema = z
  .object({
    gamma: z.number().min(0).max(1).default(1),
    lambda: lambdaSchema.default({ lengthAdaptiveAlpha: 1.5 }),
    lambdaCritic: z.number().min(0).max(1).default(1),
    crossTrajectory: z.boolean().default(true),
    /** How R reaches each segment's local GAE (segment-rewards.ts); absent = 'shared', method §4. */
    segmentReward: z.enum(SEGMENT_REWARD_MODES as [SegmentRewardMode, ...SegmentRewardMode[]]).optional(),
    /** gamma_seg of segmentReward 'discounted'; absent = 0.9. */
    segmentDiscount: z.number().min(0).max(1).optional(),
  })
  .strict();

/** gamma, lambda (fixed, or length-adaptive over the episode's generated tokens) and lambda_critic. */
export const fullTrajectoryGaeConfigSchema = z
  .object({
    gamma: z.number().min(0).max(1).default(1),
    lambda: lambdaSchema.default({ lengthAdaptiveAlpha: 1.5 }),
    lambdaCritic: z.number().min(0).max(1).default(1),
  })
  .strict();

export const broadcastConfigSchema = z
  .object({
    /** Added to the group std before dividing. */
    eps: z.number().positive().default(1e-6),
  })
  .strict();

const compactionGae: AdvantageEstimator<typeof compactionGaeConfigSchema> = {
  needsCritic: true,
  configSchema: compactionGaeConfigSchema,
  estimate({ episodes, config }) {
    const out: EstimatorOutput = { advantages: [], returns: [] };
    episodes.forEach((ep, e) => {
      const segments = ep.segments.map((seg, s) => {
        if (!seg.values)
          throw new RlInputError(`compaction-gae needs critic values: episodes[${e}].segments[${s}].values is missing`);
        return { kind: seg.kind, lossMask: seg.lossMask, values: seg.values };
      });
      const { segmentReward, segmentDiscount, ...gae } = config;
      const rewards =
        segmentReward === undefined || segmentReward === 'shared'
          ? undefined
          : segmentRewards({
              reward: ep.reward,
              generated: segments.map((seg) => generatedPositions(seg.lossMask).length),
              mode: segmentReward,
              ...(segmentDiscount !== undefined ? { discount: segmentDiscount } : {}),
            });
      const r = computeSegmentAdvantages({
        segments,
        reward: ep.reward,
        ...gae,
        ...(rewards ? { segmentRewards: rewards } : {}),
      });
      out.advantages.push(r.advantages);
      out.returns.push(r.returns);
    });
    return out;
  },
};

const fullTrajectoryGae: AdvantageEstimator<typeof fullTrajectoryGaeConfigSchema> = {
  needsCritic: true,
  configSchema: fullTrajectoryGaeConfigSchema,
  estimate({ episodes, config }) {
    const out: EstimatorOutput = { advantages: [], returns: [] };
    episodes.forEach((ep, e) => {
      const segments = ep.segments.map((seg, s) => {
        if (!seg.values)
          throw new RlInputError(
            `full-trajectory-gae needs critic values: episodes[${e}].segments[${s}].values is missing`,
          );
        return { lossMask: seg.lossMask, values: seg.values };
      });
      const r = fullTrajectoryAdvantages({ segments, reward: ep.reward, ...config });
      out.advantages.push(r.advantages);
      out.returns.push(r.returns);
    });
    return out;
  },
};

/** Normalized reward per episode within its taskKey group (see the file comment). */
export function groupNormalizedRewards(options: {
  episodes: { taskKey: string; reward: number }[];
  eps: number;
}): number[] {
  const { episodes, eps } = options;
  const groups = new Map<string, number[]>();
  episodes.forEach((ep, e) => {
    requireFinite(ep.reward, `episodes[${e}].reward`);
    const g = groups.get(ep.taskKey) ?? [];
    g.push(ep.reward);
    groups.set(ep.taskKey, g);
  });
  const stats = new Map<string, { mean: number; std: number }>();
  for (const [key, rewards] of groups) {
    const n = rewards.length;
    if (n === 1) {
      stats.set(key, { mean: 0, std: 1 });
      continue;
    }
    const mean = rewards.reduce((a, b) => a + b, 0) / n;
    const variance = rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1);
    stats.set(key, { mean, std: Math.sqrt(variance) });
  }
  return episodes.map((ep) => {
    const { mean, std } = stats.get(ep.taskKey)!;
    return (ep.reward - mean) / (std + eps);
  });
}

const broadcast: AdvantageEstimator<typeof broadcastConfigSchema> = {
  needsCritic: false,
  configSchema: broadcastConfigSchema,
  estimate({ episodes, config }) {
    const normalized = groupNormalizedRewards({ episodes, eps: config.eps });
    const out: EstimatorOutput = { advantages: [], returns: [] };
    episodes.forEach((ep, e) => {
      const advs: Float32Array[] = [];
      const rets: Float32Array[] = [];
      ep.segments.forEach((seg, s) => {
        requireBinaryMask(seg.lossMask, `episodes[${e}].segments[${s}].lossMask`);
        const a = new Float32Array(seg.lossMask.length);
        const g = new Float32Array(seg.lossMask.length);
        for (let t = 0; t < a.length; t++) {
          if (seg.lossMask[t] === 1) {
            a[t] = normalized[e]!;
            g[t] = ep.reward;
          }
        }
        advs.push(a);
        rets.push(g);
      });
      out.advantages.push(advs);
      out.returns.push(rets);
    });
    return out;
  },
};

const REGISTRY = {
  'compaction-gae': compactionGae,
  broadcast,
  'full-trajectory-gae': fullTrajectoryGae,
} as const satisfies Record<string, AdvantageEstimator>;

export type AdvantageEstimatorName = keyof typeof REGISTRY;

export function advantageEstimatorNames(): AdvantageEstimatorName[] {
  return Object.keys(REGISTRY) as AdvantageEstimatorName[];
}

export function getAdvantageEstimator(name: string): AdvantageEstimator {
  if (!Object.hasOwn(REGISTRY, name)) {
    throw new RlInputError(`unknown advantage estimator '${name}'; valid: ${advantageEstimatorNames().join(', ')}`);
  }
  return REGISTRY[name as AdvantageEstimatorName];
}

/** Looks up an estimator by name, parses its config (unknown keys rejected) and runs it. */
export function estimateAdvantages(options: {
  estimator: string;
  episodes: EpisodeAdvantageInput[];
  config?: unknown;
}): EstimatorOutput {
  const est = getAdvantageEstimator(options.estimator);
  const parsed = est.configSchema.safeParse(options.config ?? {});
  if (!parsed.success) {
    throw new RlInputError(`bad config for estimator '${options.estimator}': ${z.prettifyError(parsed.error)}`);
  }
  return est.estimate({ episodes: options.episodes, config: parsed.data });
}
