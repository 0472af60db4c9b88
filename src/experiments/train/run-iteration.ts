import { checkFaultBudget, faultMetrics, splitFaults, type FaultPolicy } from '../../rollout/faults.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import { stalenessMetrics } from './staleness.ts';
import type { TrainingStages } from './training-stages.ts';

/**
 * The three random streams of iteration i, all forked from Rng(mixSeed(seed, i)) in a fixed order
 * (the sampler's, the task seeds', the PPO minibatch order), so a replaced stage that draws
 * nothing leaves the others' streams as they were, and a resumed run replays an iteration
 * exactly (docs/decisions/0007).
 */
export function iterationRngs(options: { seed: number; iteration: number }): { sampler: Rng; sample: Rng; ppo: Rng } {
  const rng = new Rng(mixSeed(options.seed, options.iteration));
  const sampler = rng.fork();
  const sample = rng.fork();
  return { sampler, sample, ppo: rng.fork() };
}

/** One iteration's sampled batch, as the sample stage returned it, with how long it took. */
export interface SampledBatch {
  iteration: number;
  rngs: ReturnType<typeof iterationRngs>;
  /** Final records in job order, then the faulted attempts that ran again (stages.sample). */
  sampled: EpisodeRecord[];
  /** Seconds the sample stage (and the publish before it) took. */
  sampleSeconds: number;
}

/**
 * One training iteration (method §6) through the stages, in order: publish (unless the weights
 * after iteration - 1 updates are already published), sample, segments, recompute, advantages,
 * batch, update, metrics, write, checkpoint. Returns the iteration's metrics line.
 *
 * Faulted episodes (docs/faults.md) stop at the sample stage: every later stage sees only the
 * episodes that ended as the agent's, so they get no advantage, loss or critic target and the
 * batch statistics are computed without them; the metrics line counts them (`rollout/fault_*`).
 */
export async function runIteration(options: {
  stages: TrainingStages;
  iteration: number;
  seed: number;
  /** The sampler already acts with the weights after iteration - 1 updates (the run's first publish). */
  published?: boolean;
  /** Episodes in the batch and the share of them that may be left out as faults before the run stops. */
  faults: { batchEpisodes: number } & Pick<FaultPolicy, 'maxFraction'>;
}): Promise<Record<string, number>> {
  const { stages, iteration } = options;
  const rngs = iterationRngs({ seed: options.seed, iteration });
  const t0 = performance.now();
  if (!options.published) await stages.publish({ version: iteration - 1 });
  const sampled = await stages.sample({ iteration, samplerRng: rngs.sampler, rng: rngs.sample });
  const sampleSeconds = (performance.now() - t0) / 1000;
  return trainIteration({
    stages,
    batch: { iteration, rngs, sampled, sampleSeconds },
    waitSeconds: sampleSeconds,
    faults: options.faults,
  });
}

/**
 * The stages after sampling, on a batch sampled by this loop or ahead of it (async-loop.ts):
 * segments .. checkpoint. `waitSeconds`: how long the trainer waited for the batch; the metrics
 * line gains perf/wait_s and perf/train_s (the rest of the iteration up to the update) and the
 * batch's staleness (rollout/staleness_*: iteration - 1 minus each trained segment's version).
 */
export async function trainIteration(options: {
  stages: TrainingStages;
  batch: SampledBatch;
  waitSeconds: number;
  faults: { batchEpisodes: number } & Pick<FaultPolicy, 'maxFraction'>;
}): Promise<Record<string, number>> {
  const { stages, waitSeconds } = options;
  const { iteration, rngs, sampled, sampleSeconds } = options.batch;
  const t1 = performance.now();
  const { batchEpisodes, maxFraction } = options.faults;
  checkFaultBudget({ records: sampled, batchEpisodes, iteration, maxFraction });
  const records = splitFaults({ records: sampled, batchEpisodes }).trained;
  const segments = await stages.segments({ records });
  const old = await stages.recompute({ segments });
  const { advantages, returns } = await stages.advantages({ records, segments, old });
  const batch = await stages.batch({ segments, old, advantages, returns });
  const ppo = await stages.update({ batch, iteration, rng: rngs.ppo, rewards: records.map((r) => r.reward) });
  const trainSeconds = (performance.now() - t1) / 1000;
  const elapsedSeconds = waitSeconds + trainSeconds;
  const metrics = {
    ...(await stages.metrics({ iteration, records, old, ppo, sampleSeconds, elapsedSeconds })),
    ...faultMetrics({ records: sampled, batchEpisodes }),
    ...stalenessMetrics({ records, trainedVersion: iteration - 1 }),
    'perf/wait_s': waitSeconds,
    'perf/train_s': trainSeconds,
  };
  await stages.write({ iteration, records, segments, old, advantages, returns, ppo, metrics });
  await stages.checkpoint({ iteration });
  return metrics;
}
