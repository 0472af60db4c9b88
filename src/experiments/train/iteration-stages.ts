import { turnMetrics } from '../../rollout/agent-format/turn-metrics.ts';
import type { TaskFamily } from '../../env/family.ts';
import { estimateAdvantages, type AdvantageEstimatorName } from '../../rl/advantage-estimators.ts';
import type { PpoSegment } from '../../rl/ppo-update.ts';
import { recomputeOld } from '../../rl/recompute-old.ts';
import type { ChatLayout } from '../../rollout/chat-layout.ts';
import type { RolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { episodeOfJob, type EpisodeJob } from '../../rollout/episode-job.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { createEnvironment } from '../../env/create-environment.ts';
import { withStepDelay } from '../../env/step-delay.ts';
import type { Environment, EnvSpec, TokenSampler } from '../../contracts/index.ts';
import { runWithRetries } from '../../rollout/faults.ts';
import type { Rng } from '../../util/random.ts';
import type { TrainConfig } from '../../config/train-config.ts';
import type { AlgorithmSpec } from './algorithms.ts';
import type { TrainerModels } from './trainer-models.ts';

/** One segment of the batch, flattened (method §3), with the episode it came from. */
export interface BatchSegment {
  episode: number;
  kind: 'execution' | 'summary';
  tokens: Int32Array; // [T]
  lossMask: Uint8Array; // [T]
  samplerLogprobs: (number | null)[]; // [T]
}

/**
 * The jobs of one iteration's batch (method §6): B episodes on training seeds, `groupSize` samples
 * per task (broadcast's baseline group), to be sampled by the weights after iteration - 1 updates.
 */
export function episodeJobs(options: {
  family: TaskFamily;
  knobs: Record<string, unknown>;
  batchEpisodes: number;
  groupSize: number;
  iteration: number;
  rng: Rng;
}): EpisodeJob[] {
  const { family, rng } = options;
  const tasks = Math.ceil(options.batchEpisodes / options.groupSize);
  const span = family.trainSeeds.end - family.trainSeeds.start;
  const seeds = Array.from({ length: tasks }, () => family.trainSeeds.start + rng.int(span));
  return Array.from({ length: options.batchEpisodes }, (_, i) => {
    const seed = seeds[Math.floor(i / options.groupSize)]!;
    return {
      episodeId: `it${options.iteration}-ep${i}`,
      env: family.envSpec?.(seed, options.knobs) ?? { kind: 'family', family: family.name, knobs: options.knobs },
      seed,
      policyVersion: options.iteration - 1,
    };
  });
}

/**
 * Stage 1: the iteration's episodes, run in this process (environments built here from their
 * jobs). An episode that ends in a fault runs again on a fresh environment, up to `retries` times
 * (docs/faults.md). Returns one final record per job, in job order, then the faulted attempts
 * that were run again (rollout/faults.ts splitFaults reads it so).
 */
export async function sampleEpisodes(options: {
  family: TaskFamily;
  knobs: Record<string, unknown>;
  rollout: RolloutConfig;
  layout: ChatLayout;
  sampler: TokenSampler;
  /** Every environment step waits this long first (ms; env/step-delay.ts). */
  stepDelayMs?: number;
  /** Called with each episode's id as it ends (an engine pool frees the episode's replica slot). */
  onEpisodeEnd?: (episodeId: string) => void;
  /** Builds an episode's environment (default: createEnvironment; a test wraps it to inject faults). */
  createEnv?: (spec: EnvSpec) => Environment;
  /** Times a faulted episode runs again (default 0). */
  retries?: number;
  batchEpisodes: number;
  groupSize: number;
  iteration: number;
  rng: Rng;
  /** The version of the weights the sampler acts with now (default: iteration - 1, the synchronous loop's). */
  policyVersion?: () => number;
}): Promise<EpisodeRecord[]> {
  const jobs = episodeJobs(options);
  const delay = options.stepDelayMs ?? 0;
  const onEnd = options.onEpisodeEnd;
  const create = options.createEnv ?? createEnvironment;
  const run = (batch: readonly EpisodeJob[]) =>
    runEpisodes({
      episodes: batch.map((job) => episodeOfJob(job, (spec) => withStepDelay(create(spec), delay))),
      ...(onEnd ? { onEpisodeEnd: (record: EpisodeRecord) => onEnd(record.episodeId) } : {}),
      config: options.rollout,
      layout: options.layout,
      actor: options.sampler,
      policyVersion: options.policyVersion ?? (() => options.iteration - 1), // weights after iteration - 1 updates
    });
  return runWithRetries({ jobs, retries: options.retries ?? 0, run });
}

/** Stage 2: records -> flat segment list, token ids exactly as recorded (method §3). */
export function buildSegments(records: readonly EpisodeRecord[]): BatchSegment[] {
  return records.flatMap((r, episode) =>
    r.segments.map((s) => ({
      episode,
      kind: s.kind,
      tokens: Int32Array.from(s.tokens),
      lossMask: Uint8Array.from(s.lossMask),
      samplerLogprobs: s.logprobs,
    })),
  );
}

/** Stage 3: the trainer's own old log-probs (and entropies) of the policy and the critic's old values (method §6). */
export function oldLogprobsAndValues(options: {
  segments: readonly BatchSegment[];
  models: TrainerModels;
  batchTokens: number;
  mergePrefixes: boolean;
}) {
  return recomputeOld({
    segments: options.segments.map((s) => ({
      tokens: s.tokens,
      lossMask: s.lossMask,
      samplerLogprobs: s.samplerLogprobs,
    })),
    policy: options.models.trainable?.policy ?? options.models.policy,
    ...((options.models.trainable ?? options.models).critic
      ? { critic: (options.models.trainable ?? options.models).critic! }
      : {}),
    batchTokens: options.batchTokens,
    mergePrefixes: options.mergePrefixes,
  });
}

/**
 * The estimator a run uses: `advantage.estimator` when set (docs/credit.md), else its algorithm's
 * (method §7).
 */
export function estimatorOf(options: { algorithm: AlgorithmSpec; config: TrainConfig }): AdvantageEstimatorName {
  return options.config.advantage.estimator ?? options.algorithm.estimator;
}

/** Each estimator's config, read from the training config (one row per registered estimator). */
export const ESTIMATOR_CONFIGS: Readonly<Record<AdvantageEstimatorName, (config: TrainConfig) => unknown>> = {
  'compaction-gae': ({ advantage: { estimator: _e, ...gae }, ablation }) => ({
    ...gae,
    crossTrajectory: ablation.crossTrajectory,
  }),
  'full-trajectory-gae': ({ advantage: { gamma, lambda, lambdaCritic } }) => ({ gamma, lambda, lambdaCritic }),
  broadcast: () => ({}),
};

/** Stage 4: advantages and returns from the estimator registry (method §4 / §7 broadcast). */
export function computeAdvantages(options: {
  records: readonly EpisodeRecord[];
  segments: readonly BatchSegment[];
  values: Float32Array[] | null;
  algorithm: AlgorithmSpec;
  config: TrainConfig;
}): { advantages: Float32Array[]; returns: Float32Array[] } {
  const { records, segments, values, config } = options;
  const byEpisode = records.map(() => [] as number[]);
  segments.forEach((s, i) => byEpisode[s.episode]!.push(i));
  const episodes = records.map((r, e) => ({
    taskKey: `${r.env}:${r.seed}`,
    reward: r.reward,
    segments: byEpisode[e]!.map((i) => ({
      kind: segments[i]!.kind,
      lossMask: segments[i]!.lossMask,
      ...(values ? { values: values[i]! } : {}),
    })),
  }));
  const estimator = estimatorOf({ algorithm: options.algorithm, config });
  const estConfig = ESTIMATOR_CONFIGS[estimator](config);
  const out = estimateAdvantages({ estimator, episodes, config: estConfig });
  const advantages = new Array<Float32Array>(segments.length);
  const returns = new Array<Float32Array>(segments.length);
  byEpisode.forEach((idx, e) =>
    idx.forEach((i, k) => {
      advantages[i] = out.advantages[e]![k]!;
      returns[i] = out.returns[e]![k]!;
    }),
  );
  return { advantages, returns };
}

/** For each segment, how many segments follow it in its episode (0 = its last). // [S] */
export function segmentsAfter(segments: readonly Pick<BatchSegment, 'episode'>[]): Int32Array {
  const out = new Int32Array(segments.length);
  const seen = new Map<number, number>();
  for (let i = segments.length - 1; i >= 0; i--) {
    const e = segments[i]!.episode;
    out[i] = seen.get(e) ?? 0;
    seen.set(e, out[i]! + 1);
  }
  return out;
}

/** Stage 5 input: the PPO batch. Without a critic, old values are zeros (unused by the update). */
export function ppoSegments(options: {
  segments: readonly BatchSegment[];
  oldLogprobs: Float32Array[];
  oldValues: Float32Array[] | null;
  advantages: Float32Array[];
  returns: Float32Array[];
}): PpoSegment[] {
  const after = segmentsAfter(options.segments);
  return options.segments.map((s, i) => ({
    kind: s.kind,
    episode: s.episode,
    segmentsAfter: after[i]!,
    tokens: s.tokens,
    lossMask: s.lossMask,
    oldLogprobs: options.oldLogprobs[i]!,
    oldValues: options.oldValues?.[i] ?? new Float32Array(s.tokens.length),
    advantages: options.advantages[i]!,
    returns: options.returns[i]!,
    // The sampler's log-probs (one per token, as records store them), for ppo.offPolicy.
    behaviourLogprobs: Float32Array.from(s.samplerLogprobs, (v) => (v === null ? Number.NaN : v)),
  }));
}

/** Stage 6: rollout metrics, including method §8 Figure 4's summary length and tokens per execution turn. */
export function rolloutMetrics(records: readonly EpisodeRecord[]): Record<string, number> {
  const n = Math.max(1, records.length);
  let summaryTokens = 0;
  let summaries = 0;
  let execTokens = 0;
  let steps = 0;
  for (const r of records) {
    for (const s of r.segments) {
      const g = s.lossMask.reduce<number>((a, m) => a + m, 0);
      if (s.kind === 'summary') {
        summaryTokens += g;
        summaries++;
      } else execTokens += g;
    }
    steps += r.steps;
  }
  const frac = (o: string) => records.filter((r) => r.outcome === o).length / n;
  return {
    'rollout/episodes': records.length,
    'rollout/success_rate': frac('success'),
    'rollout/truncated_rate': frac('truncated'),
    'rollout/step_limit_rate': frac('step-limit'),
    'rollout/reward_mean': records.reduce((a, r) => a + r.reward, 0) / n,
    'rollout/compactions_per_episode': records.reduce((a, r) => a + r.compactions, 0) / n,
    'rollout/summary_tokens': summaries ? summaryTokens / summaries : Number.NaN,
    'rollout/tokens_per_exec_turn': steps ? execTokens / steps : Number.NaN,
    'rollout/generated_tokens': records.reduce((a, r) => a + r.generatedTokens, 0),
    ...turnMetrics(records),
  };
}
