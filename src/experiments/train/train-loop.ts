import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { FaultPolicySchema } from '../../rollout/faults.ts';
import type { LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import type { TrainConfig } from '../../config/train-config.ts';
import { algorithmSpec } from './algorithms.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';
import { truncateMetrics } from '../runs/metrics-log.ts';
import { truncateTiming } from '../runs/timing-log.ts';
import { TensorboardLog, truncateTensorboard } from '../runs/tensorboard-log.ts';
import type { ProgressReporter } from '../runs/progress.ts';
import { createRunDir, runPaths, type RunPaths } from '../runs/run-dir.ts';
import { familyByName } from '../../env/family-by-name.ts';
import { runIteration } from './run-iteration.ts';
import { runAsyncIterations } from './async-loop.ts';
import { defaultStages, type TrainingRun, type TrainingStages } from './training-stages.ts';
import { withTorchTrainer } from './torch-trainer-models.ts';
import { buildTrainerModels, trainTokenizer, type ActorKind, type TrainerModels } from './trainer-models.ts';

/**
 * The training spine (method §6), CleanRL style: every stage is a named function
 * (training-stages.ts; runIteration runs one iteration through them) and the loop fits a screen.
 * All randomness of iteration i comes from Rng(mixSeed(seed, i)), and a checkpoint holds
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
  /** Where the engine replicas' health changes are reported (default: stderr). */
  log?: (line: string) => void;
  /**
   * Replaces or wraps the loop's stages (a benchmark times them, a rollout queue replaces
   * `sample`, engine replicas replace `publish`); called once, before the run's first publish.
   */
  wrapStages?: (stages: TrainingStages, run: TrainingRun) => TrainingStages;
  /** Start here instead of right after the latest checkpoint (a benchmark starts past the critic warm-up). */
  firstIteration?: number;
  /** Stop after this iteration instead of config.iterations. */
  lastIteration?: number;
}): Promise<{ lastIteration: number; models: TrainerModels }> {
  const { config } = options;
  const paths = runPaths(options.runDir);
  const family = familyByName(config.env.name);
  const tokenizer: LoadedTokenizer = await trainTokenizer(config, family.tokenizer);
  const { config: rollout, layout } = resolveRolloutConfig({
    input: overFamilySizes(family.rollout, config.rollout),
    tokenizer,
    tools: family.tools ?? null,
  });
  const algorithm = algorithmSpec(config.algorithm);
  const built = await buildTrainerModels({
    config,
    tokenizer,
    family,
    needsCritic: algorithm.needsCritic,
    actor: options.actor,
    layout,
    rollout,
    rng: new Rng(mixSeed(config.seed, 0)),
    engineWeightsDir: join(paths.root, 'engine-weights'),
    engineAdaptersDir: join(paths.root, 'engine-adapters'),
    ...(options.engineToken ? { engineToken: options.engineToken } : {}),
    log: options.log ?? ((line) => process.stderr.write(`${line}\n`)),
  });
  const models = config.trainer ? withTorchTrainer(built, config.trainer) : built;
  const run: TrainingRun = {
    config,
    models,
    tokenizer,
    family,
    rollout,
    layout,
    algorithm,
    paths,
    ppoConfig: {
      ...config.ppo,
      trainSummaries: config.ablation.trainSummaries,
      lossAggregation: config.ablation.lossAggregation,
    },
    ...(config.tensorboard === false ? {} : { tensorboard: new TensorboardLog(paths.root) }),
  };
  const wrap = options.wrapStages ?? ((stages: TrainingStages) => stages);
  const stages = wrap(defaultStages(run), run);
  // The run directory appears only now, once the config resolved and every input loaded (task
  // family, rollout config, model or init checkpoint): a failed start leaves nothing behind.
  const fresh = !existsSync(paths.config);
  let published = false;
  if (fresh) {
    const before = existsSync(paths.root) ? new Set(readdirSync(paths.root)) : null;
    createRunDir({
      dir: paths.root,
      system: options.system ?? config.name,
      config,
      actor: options.actor,
      ...(options.root !== undefined ? { root: options.root } : {}),
    });
    // A remote engine is an input too: it must load the first weights before the run counts as
    // started, so a wrong URL or admin token leaves nothing behind either.
    try {
      await stages.publish({ version: 0 });
      published = config.engine !== undefined;
    } catch (e) {
      if (before === null) rmSync(paths.root, { recursive: true, force: true });
      else
        for (const f of readdirSync(paths.root))
          if (!before.has(f)) rmSync(join(paths.root, f), { recursive: true, force: true });
      throw e;
    }
  }

  const resumed = await resumePoint({ paths, models });
  const first = options.firstIteration ?? resumed + 1;
  if (first <= resumed)
    throw new Error(
      `firstIteration ${first} would repeat iterations the run already logged (it resumes after ${resumed})`,
    );
  const last = options.lastIteration ?? config.iterations;
  const faultPolicy = FaultPolicySchema.parse(config.faults ?? {});
  options.progress?.start({ total: last, first });
  const maxStaleness = config.maxStaleness ?? 0;
  try {
    if (maxStaleness > 0) {
      await runAsyncIterations({
        stages,
        first,
        last,
        seed: config.seed,
        maxStaleness,
        published,
        faults: { batchEpisodes: config.batchEpisodes, maxFraction: faultPolicy.maxFraction },
        ...(options.progress ? { progress: options.progress } : {}),
      }); // it publishes the weights after every update, the final ones included
    } else {
      for (let iteration = first; iteration <= last; iteration++) {
        const metrics = await runIteration({
          stages,
          iteration,
          seed: config.seed,
          published,
          faults: { batchEpisodes: config.batchEpisodes, maxFraction: faultPolicy.maxFraction },
        });
        published = false;
        options.progress?.update({ iteration, metrics });
      }
      await stages.publish({ version: last }); // a remote engine ends on the final weights, ready for evaluation
    }
  } finally {
    await models.trainable?.close(); // a trainer process ends with the run (its weights pulled first)
  }
  options.progress?.stop();
  return { lastIteration: last, models };
}

/** Restores the latest checkpoint (if any) and cuts metrics, timing and event files back to it; returns its iteration. */
async function resumePoint(options: { paths: RunPaths; models: TrainerModels }): Promise<number> {
  const ckpt = latestCheckpoint(options.paths.root);
  if (ckpt) await options.models.restore(ckpt.dir);
  const iteration = ckpt?.iteration ?? 0;
  truncateMetrics({ path: options.paths.metrics, lastIteration: iteration });
  truncateTiming({ path: options.paths.timing, lastIteration: iteration });
  truncateTensorboard({ dir: options.paths.root, lastIteration: iteration });
  return iteration;
}
