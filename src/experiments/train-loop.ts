import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ppoUpdate } from '../rl/ppo-update.ts';
import type { ChatLayout } from '../rollout/chat-layout.ts';
import { resolveRolloutConfig } from '../rollout/config.ts';
import type { EpisodeRecord } from '../rollout/record.ts';
import { renderEpisode } from '../rollout/render.ts';
import type { LoadedTokenizer } from '../model/load-tokenizer.ts';
import { mixSeed, Rng } from '../util/random.ts';
import type { TrainConfig } from '../config/train-config.ts';
import { iterationDirName } from '../report/run-files.ts';
import { algorithmSpec } from './algorithms.ts';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { writeCreditSamples } from './credit-samples.ts';
import { latestCheckpoint, saveCheckpointDir } from './checkpoint-store.ts';
import {
  buildSegments,
  computeAdvantages,
  oldLogprobsAndValues,
  ppoSegments,
  rolloutMetrics,
  sampleEpisodes,
} from './iteration-stages.ts';
import { appendMetrics, truncateMetrics } from './metrics-log.ts';
import type { ProgressReporter } from './progress.ts';
import { createRunDir, runPaths } from './run-dir.ts';
import { getFamily } from '../env/registry.ts';
import { buildTrainerModels, trainTokenizer, type ActorKind, type TrainerModels } from './trainer-models.ts';

/**
 * The training spine (method §6), CleanRL style: every stage is a named function and the loop fits
 * a screen. All randomness of iteration i comes from Rng(mixSeed(seed, i)), and a checkpoint holds
 * weights and optimizer moments exactly, so a run resumed from its checkpoint at iteration c
 * replays iterations c+1.. exactly as an uninterrupted run would (docs/decisions/0007).
 */
export async function train(options: {
  runDir: string;
  config: TrainConfig;
  actor: ActorKind;
  /** System label stored in a new run's config.json (default config.name). */
  system?: string;
  /** A pipeline directory the run belongs to (its provenance names paths relative to it). */
  root?: string;
  /** A remote engine's admin token (config.engine), from the environment, never from the config. */
  engineToken?: string;
  progress?: ProgressReporter;
}): Promise<{ lastIteration: number; models: TrainerModels }> {
  const { config } = options;
  const paths = runPaths(options.runDir);
  const tokenizer: LoadedTokenizer = await trainTokenizer(config);
  const family = getFamily(config.env.name);
  const { config: rollout, layout } = resolveRolloutConfig({ input: config.rollout, tokenizer });
  const algorithm = algorithmSpec(config.algorithm);
  const models = await buildTrainerModels({
    config,
    tokenizer,
    family,
    needsCritic: algorithm.needsCritic,
    actor: options.actor,
    layout,
    rollout,
    rng: new Rng(mixSeed(config.seed, 0)),
    engineWeightsDir: join(paths.root, 'engine-weights'),
    ...(options.engineToken ? { engineToken: options.engineToken } : {}),
  });
  // The run directory appears only now, once the config resolved and every input loaded (task
  // family, rollout config, model or init checkpoint): a failed start leaves nothing behind.
  const fresh = !existsSync(paths.config);
  let published = false;
  if (fresh) {
    const before = existsSync(paths.root) ? new Set(readdirSync(paths.root)) : null;
    createRunDir({ dir: paths.root, system: options.system ?? config.name, config, root: options.root });
    // A remote engine is an input too: it must load the first weights before the run counts as
    // started, so a wrong URL or admin token leaves nothing behind either.
    try {
      await models.publish();
      published = config.engine !== undefined;
    } catch (e) {
      if (before === null) rmSync(paths.root, { recursive: true, force: true });
      else
        for (const f of readdirSync(paths.root))
          if (!before.has(f)) rmSync(join(paths.root, f), { recursive: true, force: true });
      throw e;
    }
  }
  const ppoConfig = {
    ...config.ppo,
    trainSummaries: config.ablation.trainSummaries,
    lossAggregation: config.ablation.lossAggregation,
  };

  const start = await resumePoint({ runDir: paths.root, metricsPath: paths.metrics, models });
  options.progress?.start({ total: config.iterations, first: start + 1 });
  for (let iteration = start + 1; iteration <= config.iterations; iteration++) {
    const rng = new Rng(mixSeed(config.seed, iteration));
    const t0 = performance.now();
    if (!published) await models.publish();
    published = false;
    const records = await sampleEpisodes({
      family,
      knobs: config.env.knobs,
      rollout,
      layout,
      sampler: models.sampler(rng.fork()),
      batchEpisodes: config.batchEpisodes,
      groupSize: config.groupSize,
      iteration,
      rng: rng.fork(),
    });
    const sampleSeconds = (performance.now() - t0) / 1000;
    const segments = buildSegments(records);
    const old = oldLogprobsAndValues({
      segments,
      models,
      batchTokens: config.ppo.minibatchTokens,
      mergePrefixes: config.ppo.mergePrefixes,
    });
    const { advantages, returns } = computeAdvantages({ records, segments, values: old.oldValues, algorithm, config });
    const batch = ppoSegments({
      segments,
      oldLogprobs: old.oldLogprobs,
      oldValues: old.oldValues,
      advantages,
      returns,
    });
    const ppo = ppoUpdate({
      segments: batch,
      policy: models.policy,
      ...(models.critic ? { critic: models.critic } : {}),
      config: ppoConfig,
      iteration,
      rng: rng.fork(),
    });
    const rolloutStats = rolloutMetrics(records);
    const metrics = {
      ...rolloutStats,
      ...ppo,
      'policy/sampler_logprob_mismatch': old.meanLogprobMismatch,
      'perf/tokens_per_s': rolloutStats['rollout/generated_tokens']! / Math.max(1e-9, sampleSeconds),
      'perf/iteration_s': (performance.now() - t0) / 1000,
    };
    appendMetrics({ path: paths.metrics, iteration, metrics });
    writeSamples({ dir: paths.samples, iteration, records: records.slice(0, config.sampleTrajectories), layout });
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
    if (iteration % config.checkpointEvery === 0 || iteration === config.iterations) {
      await saveCheckpointDir({
        runDir: paths.root,
        iteration,
        write: (dir) => models.save(dir, { iteration, system: config.name }),
      });
    }
    options.progress?.update({ iteration, metrics });
  }
  await models.publish(); // a remote engine ends on the final weights, ready for evaluation
  options.progress?.stop();
  return { lastIteration: config.iterations, models };
}

/** Restores the latest checkpoint (if any) and cuts metrics back to it; returns its iteration. */
async function resumePoint(options: { runDir: string; metricsPath: string; models: TrainerModels }): Promise<number> {
  const ckpt = latestCheckpoint(options.runDir);
  if (ckpt) await options.models.restore(ckpt.dir);
  const iteration = ckpt?.iteration ?? 0;
  truncateMetrics({ path: options.metricsPath, lastIteration: iteration });
  return iteration;
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
