import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FaultPolicy } from '../../rollout/faults.ts';
import type { ProgressReporter } from '../runs/progress.ts';
import { iterationRngs, trainIteration, type SampledBatch } from './run-iteration.ts';
import { requireWithinStaleness } from './staleness.ts';
import { aroundStages, type TrainingStages } from './training-stages.ts';

/** Wakes everyone waiting for a condition each time the shared state changes. */
class Changes {
  private waiters: (() => void)[] = [];
  notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }
  async until(ready: () => boolean): Promise<void> {
    while (!ready()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

/**
 * Iterations first..last with sampling ahead of training (docs/async.md, docs/decisions/0041):
 * a producer starts iteration j's batch once the trainer has made j - 1 - S updates, with
 * whatever weights it has then, and keeps going while they train; batches that finish wait in
 * order for the trainer, which trains iteration k on its batch and then publishes the weights
 * after k updates. No trained segment is more than S versions old: batch k starts with version
 * >= k - 1 - S, versions only grow, and iteration k trains the weights after k - 1 updates.
 *
 * At most S batches are sampled at once (S = 1: one after the other, each while the previous one
 * trains; S = 2: two side by side), so they do not all start together with the first weights
 * and then wait for the trainer in lock step; finished batches wait for the trainer in order,
 * and a batch may start before its predecessor finishes only as far as both bounds allow.
 * An episode that crosses a weight push goes on with
 * the new weights; each sampler call records the version it started with, each segment the
 * version of its first call (its oldest tokens), and the sampler's own log-probs stay the true
 * behaviour log-probs of every token, which the off-policy corrections read (rl/off-policy.ts).
 * S = 0 is not run here: train() keeps the synchronous loop for it, bit for bit.
 */
export async function runAsyncIterations(options: {
  stages: TrainingStages;
  first: number;
  last: number;
  seed: number;
  maxStaleness: number;
  /** The sampler already acts with the weights after first - 1 updates. */
  published: boolean;
  faults: { batchEpisodes: number } & Pick<FaultPolicy, 'maxFraction'>;
  progress?: ProgressReporter;
}): Promise<void> {
  const { first, last, seed, maxStaleness: S } = options;
  // The update and the recomputation run synchronously in this thread; before each stage the
  // event loop gets a turn, so the batches being sampled take their environment steps and
  // sampler calls between the trainer's stages instead of after the whole iteration.
  const stages = aroundStages(options.stages, async (_name, call) => {
    await nextTurn();
    return call();
  });
  if (!Number.isInteger(S) || S < 1) throw new Error(`internal: runAsyncIterations needs S >= 1, got ${S}`);
  if (!options.published) await stages.publish({ version: first - 1 });
  const state = { version: first - 1, stopped: false, sampling: 0 };
  const batches = new Map<number, Promise<SampledBatch>>();
  const changes = new Changes();

  const produce = async (): Promise<void> => {
    for (let j = first; j <= last; j++) {
      await changes.until(() => state.stopped || (state.version >= j - 1 - S && state.sampling < S));
      if (state.stopped) return;
      const rngs = iterationRngs({ seed, iteration: j });
      const t0 = performance.now();
      state.sampling++;
      const batch = Promise.resolve(
        stages.sample({ iteration: j, samplerRng: rngs.sampler, rng: rngs.sample, version: () => state.version }),
      )
        .then((sampled) => ({ iteration: j, rngs, sampled, sampleSeconds: (performance.now() - t0) / 1000 }))
        .finally(() => {
          state.sampling--;
          changes.notify();
        });
      batch.catch(() => undefined); // the trainer awaits it and sees the error
      batches.set(j, batch);
      changes.notify();
    }
  };
  const producer = produce();

  try {
    for (let k = first; k <= last; k++) {
      const t0 = performance.now();
      await changes.until(() => batches.has(k));
      const batch = await batches.get(k)!;
      batches.delete(k);
      const waitSeconds = (performance.now() - t0) / 1000;
      requireWithinStaleness({ records: batch.sampled, trainedVersion: k - 1, maxStaleness: S, iteration: k });
      const metrics = await trainIteration({ stages, batch, waitSeconds, faults: options.faults });
      await stages.publish({ version: k }); // the producer's next sampler calls act with these weights
      state.version = k;
      changes.notify();
      options.progress?.update({ iteration: k, metrics });
    }
  } finally {
    // On an error, start nothing new and let the batches already running end (their
    // environments close) before the run ends.
    state.stopped = true;
    changes.notify();
    await producer;
    await Promise.allSettled([...batches.values()]);
  }
}
