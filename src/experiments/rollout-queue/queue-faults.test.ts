/**
 * Faults on rollout workers (docs/faults.md): an episode a worker ran to a fault goes to the queue
 * again as a new job, up to faults.retries times, exactly as the trainer's own process would run
 * it again; one still faulted after its retries is left out of the update and counted. A real
 * redis-server and real BullMQ workers; the fault is an environment whose reset fails, as a
 * sandbox that did not start would.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { createEnvironment } from '../../env/create-environment.ts';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import type { EpisodeMessage } from '../../queue/episode-message.ts';
import { startQueueWorker } from '../../queue/queue-worker.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../../queue/testing/redis-server.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { episodeOfJob } from '../../rollout/episode-job.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { queueSampling } from './queue-sampling.ts';
import { RolloutWorker } from './rollout-worker.ts';
import { train } from '../train/train-loop.ts';
import { FaultBudgetError } from '../../rollout/faults.ts';

const available = redisAvailable('faults on rollout workers');
const tokenizer = loadTokenizer('word');

/** The job's episode with an environment whose reset fails (a sandbox fault), as the worker would run it. */
async function faulted(m: EpisodeMessage) {
  const { config, layout } = resolveRolloutConfig({ input: m.rollout, tokenizer });
  const [record] = await runEpisodes({
    episodes: [
      episodeOfJob(m.job, (spec) => ({
        ...createEnvironment(spec),
        reset: () => {
          throw Object.assign(new Error('the sandbox did not start'), { faultKind: 'sandbox' });
        },
      })),
    ],
    config,
    layout,
    actor: textPolicySampler({ tokenizer, policy: getFamily('chunk-sum').expert, rng: new Rng(mixSeed(1, 2)) }),
  });
  return record!;
}

describe.skipIf(!available)(
  'faults on rollout workers (real redis-server, BullMQ workers)',
  { timeout: 120_000 },
  () => {
    let redis: RedisProcess;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it('a faulted episode runs again as a new job; one still faulted after its retries is left out and counted', async () => {
      const ran: string[] = [];
      const episodes = new RolloutWorker();
      const name = 'queue-faults';
      // Episode 1 faults on its first run only; episode 2 on every run.
      const worker = await startQueueWorker({
        url: redis.url,
        name,
        concurrency: 2,
        run: async (m, signal) => {
          ran.push(m.job.episodeId);
          return m.job.episodeId === 'it1-ep1' || m.job.episodeId.startsWith('it1-ep2')
            ? faulted(m)
            : episodes.run(m, signal);
        },
      });
      const runDir = join(mkdtempSync(join(tmpdir(), 'crl-queue-faults-')), 'run');
      const config = parseTrainConfig({
        env: { name: 'chunk-sum' },
        model: { preset: 'tiny' },
        batchEpisodes: 4,
        iterations: 1,
        sampleTrajectories: 0,
        queue: { url: redis.url, name, timeoutSec: 30 },
        faults: { retries: 1, maxFraction: 0.5 },
      });
      const lines: string[] = [];
      const queue = await queueSampling({ config, actor: 'expert', runDir, log: (l) => lines.push(l), secret: null });
      try {
        await train({ runDir, config, actor: 'expert', wrapStages: queue.wrap });
      } finally {
        await queue.close();
        await worker.close();
      }
      expect(ran.filter((id) => id.includes('-retry')).sort()).toEqual(['it1-ep1-retry1', 'it1-ep2-retry1']);
      expect(ran).toHaveLength(6);
      const [line] = readMetrics(join(runDir, 'metrics.jsonl'));
      expect(line!.metrics).toMatchObject({
        'rollout/fault_sandbox': 3, // ep1, ep2 and ep2's retry
        'rollout/fault_retried': 2,
        'rollout/fault_left_out': 1,
        'rollout/episodes': 3,
        'rollout/failed': 0,
        'rollout/retried': 0,
      });
      expect(lines.some((l) => /iteration 1 \(faults run again, attempt 1\): 2\/2 done/.test(l))).toBe(true);
    });

    /**
     * A queue run whose worker throws for some jobs on every attempt (an environment that breaks
     * the worker, an engine that fails it): `throws` names the episodes and what they throw.
     */
    async function throwingRun(options: {
      name: string;
      throws: (episodeId: string) => Error | null;
      maxFraction: number;
    }) {
      const ran: string[] = [];
      const episodes = new RolloutWorker();
      const worker = await startQueueWorker({
        url: redis.url,
        name: options.name,
        concurrency: 2,
        run: async (m, signal) => {
          ran.push(m.job.episodeId);
          const error = options.throws(m.job.episodeId);
          if (error) throw error;
          return episodes.run(m, signal);
        },
      });
      const runDir = join(mkdtempSync(join(tmpdir(), 'crl-queue-given-up-')), 'run');
      const config = parseTrainConfig({
        env: { name: 'chunk-sum' },
        model: { preset: 'tiny' },
        batchEpisodes: 4,
        iterations: 2,
        sampleTrajectories: 0,
        queue: { url: redis.url, name: options.name, timeoutSec: 30, attempts: 2 },
        faults: { retries: 1, maxFraction: options.maxFraction },
      });
      const lines: string[] = [];
      const queue = await queueSampling({ config, actor: 'expert', runDir, log: (l) => lines.push(l), secret: null });
      try {
        const error = await train({ runDir, config, actor: 'expert', wrapStages: queue.wrap }).then(
          () => null,
          (e: unknown) => e as Error,
        );
        return { error, ran, lines, metrics: readMetrics(join(runDir, 'metrics.jsonl')) };
      } finally {
        await queue.close();
        await worker.close();
      }
    }

    it('jobs the queue gives up on are faults: most of a batch given up stops the run on the fault budget, naming the first', async () => {
      // Every episode but ep3 throws in the worker, on every attempt.
      const r = await throwingRun({
        name: 'queue-given-up-most',
        throws: (id) => (id === 'it1-ep3' ? null : new Error('the environment broke the worker')),
        maxFraction: 0.5,
      });
      expect(r.error).toBeInstanceOf(FaultBudgetError);
      expect(r.error!.message).toBe(
        'iteration 1: 3 of 4 episodes ended in faults after their retries (more than faults.maxFraction 0.5); ' +
          'the first: it1-ep0: environment fault during job: the queue gave its job up: the environment broke the worker',
      );
      expect(r.metrics).toEqual([]); // stopped before the update of iteration 1
      // Each given-up job ran its two attempts and was not queued again as a fault retry.
      expect(r.ran.filter((id) => id === 'it1-ep0')).toHaveLength(2);
      expect(r.ran.some((id) => id.includes('-retry'))).toBe(false);
    });

    it('a few jobs given up are counted as faults of the kind the worker named, left out, and the run goes on', async () => {
      // ep1 of each iteration throws as an engine that failed would (its error names the kind).
      const r = await throwingRun({
        name: 'queue-given-up-few',
        throws: (id) =>
          /^it\d+-ep1$/.test(id) ? Object.assign(new Error('every replica is down'), { faultKind: 'engine' }) : null,
        maxFraction: 0.5,
      });
      expect(r.error).toBeNull();
      expect(r.metrics.map((m) => m.iteration)).toEqual([1, 2]);
      for (const m of r.metrics)
        expect(m.metrics).toMatchObject({
          'rollout/fault_engine': 1,
          'rollout/fault_environment': 0,
          'rollout/fault_left_out': 1,
          'rollout/fault_retried': 0,
          'rollout/fault_rate': 0.25,
          'rollout/episodes': 3,
          'rollout/failed': 1,
          'rollout/retried': 1, // the given-up job's second attempt
        });
      expect(r.lines).toContain(
        '[queue] iteration 1: 1 job(s) ran again on the workers (a lost worker or a failed attempt), 1 given up (faults)',
      );
    });
  },
);
