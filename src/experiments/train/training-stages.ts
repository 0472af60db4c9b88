import { join } from 'node:path';
import type { TrainConfig } from '../../config/train-config.ts';
import type { TaskFamily } from '../../env/family.ts';
import type { LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { iterationDirName } from '../../report/run-files.ts';
import { ppoUpdate, type PpoMetrics, type PpoSegment } from '../../rl/ppo-update.ts';
import type { RecomputeResult } from '../../rl/recompute-old.ts';
import type { ChatLayout } from '../../rollout/chat-layout.ts';
import type { RolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { FaultPolicySchema } from '../../rollout/faults.ts';
import { renderEpisode } from '../../rollout/render.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import type { Rng } from '../../util/random.ts';
import type { AlgorithmSpec } from './algorithms.ts';
import { saveCheckpointDir } from '../runs/checkpoint-store.ts';
import { writeCreditSamples } from './credit-samples.ts';
import {
  buildSegments,
  computeAdvantages,
  oldLogprobsAndValues,
  ppoSegments,
  rolloutMetrics,
  sampleEpisodes,
  type BatchSegment,
} from './iteration-stages.ts';
import { appendMetrics } from '../runs/metrics-log.ts';
import { appendTiming, splitWallClock } from '../runs/timing-log.ts';
import { episodeMarkdown } from '../runs/tensorboard-text.ts';
import type { TensorboardLog } from '../runs/tensorboard-log.ts';
import { iterationHistograms } from '../runs/tensorboard-histograms.ts';
import type { RunPaths } from '../runs/run-dir.ts';
import type { TrainerModels } from './trainer-models.ts';

type MaybePromise<T> = T | Promise<T>;

/** What one training run's stages share: its config and what train() built from it. */
export interface TrainingRun {
  config: TrainConfig;
  models: TrainerModels;
  /** The tokenizer the run's records are in (a rollout worker loads the same one, checked by its sha256). */
  tokenizer: LoadedTokenizer;
  family: TaskFamily;
  rollout: RolloutConfig;
  layout: ChatLayout;
  algorithm: AlgorithmSpec;
  paths: RunPaths;
  /** config.ppo with the ablation switches the update reads (method §7). */
  ppoConfig: TrainConfig['ppo'] & Pick<TrainConfig['ablation'], 'trainSummaries' | 'lossAggregation'>;
  /** Where the write stage logs for TensorBoard; absent when the run writes no event files. */
  tensorboard?: TensorboardLog;
}

/**
 * The seams of one training iteration (method §6), in the order runIteration calls them. Each
 * stage may be replaced or wrapped (train's `wrapStages`) without copying the loop: a benchmark
 * times them, a rollout queue replaces `sample` (its input names the iteration, so an
 * asynchronous loop can hand each iteration the records it sampled ahead), several engine
 * replicas replace `publish`. Every stage may return a promise.
 */
export interface TrainingStages {
  /** Makes the sampler act with the weights after `version` updates (a remote engine loads them). */
  publish: (input: { version: number }) => MaybePromise<void>;
  /**
   * B episodes on training seeds with the weights after iteration - 1 updates (method §3): one
   * final record per episode in batch order, then any faulted attempts that were run again
   * (docs/faults.md). Only the episodes that ended as the agent's reach the later stages.
   */
  sample: (input: {
    iteration: number;
    samplerRng: Rng;
    rng: Rng;
    /**
     * The version of the weights the sampler acts with right now, read as each sampler call
     * starts (async-loop.ts: the weights may move on while the batch runs). Absent: iteration - 1.
     */
    version?: () => number;
  }) => MaybePromise<EpisodeRecord[]>;
  segments: (input: { records: EpisodeRecord[] }) => MaybePromise<BatchSegment[]>;
  /** The trainer's own old log-probs, entropies and the critic's old values. */
  recompute: (input: { segments: BatchSegment[] }) => MaybePromise<RecomputeResult>;
  advantages: (input: {
    records: EpisodeRecord[];
    segments: BatchSegment[];
    old: RecomputeResult;
  }) => MaybePromise<{ advantages: Float32Array[]; returns: Float32Array[] }>;
  batch: (input: {
    segments: BatchSegment[];
    old: RecomputeResult;
    advantages: Float32Array[];
    returns: Float32Array[];
  }) => MaybePromise<PpoSegment[]>;
  /** `rewards`: the trained episodes' rewards (ppo.uniformRewards reads them). */
  update: (input: { batch: PpoSegment[]; iteration: number; rng: Rng; rewards: number[] }) => MaybePromise<PpoMetrics>;
  /** The iteration's metrics line; `sampleSeconds` includes publishing, `elapsedSeconds` runs to here. */
  metrics: (input: {
    /** The iteration the line is for (a sample stage that ran ahead keeps its counts per iteration). */
    iteration: number;
    records: EpisodeRecord[];
    old: RecomputeResult;
    ppo: PpoMetrics;
    sampleSeconds: number;
    elapsedSeconds: number;
  }) => MaybePromise<Record<string, number>>;
  /**
   * The run's records: the metrics line (metrics.jsonl) and its wall-clock numbers
   * (`perf/...`, timing.jsonl), the same numbers and the sampled episodes for TensorBoard,
   * sample trajectories and their per-token credit.
   */
  write: (input: {
    iteration: number;
    records: EpisodeRecord[];
    segments: BatchSegment[];
    old: RecomputeResult;
    advantages: Float32Array[];
    returns: Float32Array[];
    ppo: PpoMetrics;
    metrics: Record<string, number>;
  }) => MaybePromise<void>;
  /** Saves a checkpoint when the run's cadence says so. */
  checkpoint: (input: { iteration: number }) => MaybePromise<void>;
}

export type StageName = keyof TrainingStages;

/** The stages in the order one iteration runs them (publish is skipped right after the run's first publish). */
export const STAGE_NAMES: readonly StageName[] = [
  'publish',
  'sample',
  'segments',
  'recompute',
  'advantages',
  'batch',
  'update',
  'metrics',
  'write',
  'checkpoint',
];

/** The training loop's own stages for a run. */
export function defaultStages(run: TrainingRun): TrainingStages {
  const { config, models, ppoConfig, paths } = run;
  return {
    publish: ({ version }) => models.publish(version),
    sample: ({ iteration, samplerRng, rng, version }) =>
      sampleEpisodes({
        ...(version ? { policyVersion: version } : {}),
        family: run.family,
        knobs: config.env.knobs,
        rollout: run.rollout,
        layout: run.layout,
        sampler: models.sampler(samplerRng),
        ...(models.engines ? { onEpisodeEnd: (id: string) => models.engines!.forget(id) } : {}),
        stepDelayMs: config.env.stepDelayMs ?? 0,
        retries: FaultPolicySchema.parse(config.faults ?? {}).retries,
        batchEpisodes: config.batchEpisodes,
        groupSize: config.groupSize,
        iteration,
        rng,
      }),
    segments: ({ records }) => buildSegments(records),
    recompute: ({ segments }) =>
      oldLogprobsAndValues({
        segments,
        models,
        batchTokens: config.ppo.minibatchTokens,
        mergePrefixes: config.ppo.mergePrefixes,
      }),
    advantages: ({ records, segments, old }) =>
      computeAdvantages({ records, segments, values: old.oldValues, algorithm: run.algorithm, config }),
    batch: ({ segments, old, advantages, returns }) =>
      ppoSegments({ segments, oldLogprobs: old.oldLogprobs, oldValues: old.oldValues, advantages, returns }),
    update: ({ batch, iteration, rng, rewards }) => {
      const on = models.trainable ?? models;
      const t0 = performance.now();
      models.trainable?.takeTiming?.(); // the recompute and checkpoint pulls are not the update's
      const ppo = ppoUpdate({
        segments: batch,
        policy: on.policy,
        ...(on.critic ? { critic: on.critic } : {}),
        config: ppoConfig,
        iteration,
        rng,
        rewards,
      });
      models.trainable?.afterUpdate();
      const wire = models.trainable?.takeTiming?.();
      return {
        ...ppo,
        'perf/update_s': (performance.now() - t0) / 1000,
        // With a trainer process: its handlers' share of the update, and the wire's (the rest of
        // each request's round trip: framing, the pipe or socket, the worker hand-off).
        ...(wire ? { 'perf/trainer_compute_s': wire.computeS, 'perf/trainer_wire_s': wire.wireS } : {}),
      };
    },
    metrics: ({ records, old, ppo, sampleSeconds, elapsedSeconds }) => {
      const rolloutStats = rolloutMetrics(records);
      return {
        ...rolloutStats,
        // In this process no episode runs twice or is given up; a rollout queue replaces these.
        'rollout/retried': 0,
        'rollout/failed': 0,
        'rollout/stale_dropped': 0,
        // Busy answers (503 with Retry-After) the engine replicas gave and the pool waited out.
        ...(models.engines ? { 'rollout/engine_busy_waits': models.engines.takeBusyWaits() } : {}),
        ...ppo,
        'policy/sampler_logprob_mismatch': old.meanLogprobMismatch,
        'perf/tokens_per_s': rolloutStats['rollout/generated_tokens']! / Math.max(1e-9, sampleSeconds),
        'perf/sample_s': sampleSeconds,
        'perf/iteration_s': elapsedSeconds,
      };
    },
    write: ({ iteration, records, segments, old, advantages, returns, ppo, metrics }) => {
      const split = splitWallClock(metrics);
      appendMetrics({ path: paths.metrics, iteration, metrics: split.metrics });
      appendTiming({ path: paths.timing, iteration, timing: split.timing });
      run.tensorboard?.appendIteration({
        iteration,
        metrics: split.metrics,
        timing: split.timing,
        texts: records
          .slice(0, config.sampleTrajectories)
          .map((r, i) => ({ tag: `samples/episode_${i}`, text: episodeMarkdown(r, run.layout) })),
        histograms: iterationHistograms({ segments, advantages }),
      });
      writeSamples({
        dir: paths.samples,
        iteration,
        records: records.slice(0, config.sampleTrajectories),
        layout: run.layout,
      });
      writeCreditSamples({
        dir: paths.samples,
        iteration,
        count: config.sampleTrajectories,
        records,
        segments,
        old,
        advantages,
        returns,
        ppo: { ...ppoConfig, policyUpdated: ppo['train/policy_updated'] === 1 },
        policy: models.policy,
      });
    },
    checkpoint: async ({ iteration }) => {
      if (iteration % config.checkpointEvery !== 0 && iteration !== config.iterations) return;
      await saveCheckpointDir({
        runDir: paths.root,
        iteration,
        write: (dir) => models.save(dir, { iteration, system: config.name }),
      });
    },
  };
}

/**
 * Wraps every stage: `around(name, call)` runs in its place and decides when (and whether) to
 * call the stage, e.g. to time it or log it.
 */
export function aroundStages(
  stages: TrainingStages,
  around: (name: StageName, call: () => unknown) => unknown,
): TrainingStages {
  const out: Partial<Record<StageName, (input: never) => unknown>> = {};
  for (const name of STAGE_NAMES) {
    const stage = stages[name] as (input: unknown) => unknown;
    out[name] = (input: unknown) => around(name, () => stage(input));
  }
  return out as TrainingStages;
}

/** Human-readable sample trajectories (method §3 records rendered), one file per iteration. */
function writeSamples(options: {
  dir: string;
  iteration: number;
  records: readonly EpisodeRecord[];
  layout: ChatLayout;
}): void {
  if (options.records.length === 0) return;
  const text = options.records.map((r) => renderEpisode(r, options.layout)).join('\n\n');
  writeFileAtomic(join(options.dir, `${iterationDirName(options.iteration)}.txt`), text);
}
