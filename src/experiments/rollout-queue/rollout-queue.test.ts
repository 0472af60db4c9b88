/**
 * The rollout queue on a real redis-server (a throwaway process per suite): the trainer's side
 * (EpisodeQueue) against real BullMQ workers running real episodes (RolloutWorker, the chunk-sum
 * family's scripted expert). What must hold under at-least-once delivery: every record once, in
 * job order, equal to the record the trainer's own process makes; retries counted, give-ups
 * reported with their reason; a missing worker or Redis is a clear error within the deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { createEnvironment } from '../../env/create-environment.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { EpisodeQueue } from '../../queue/episode-queue.ts';
import type { EpisodeMessage } from '../../queue/episode-message.ts';
import { startQueueWorker } from '../../queue/queue-worker.ts';
import { QueueError } from '../../queue/redis-connection.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../../queue/testing/redis-server.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { episodeOfJob } from '../../rollout/episode-job.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { episodeJobs } from '../train/iteration-stages.ts';
import { RolloutWorker } from './rollout-worker.ts';

const available = redisAvailable('rollout queue tests');
const tokenizer = loadTokenizer('word');
const family = getFamily('chunk-sum');

let queueNames = 0;
function batch(n: number, iteration = 1, session = 's1'): EpisodeMessage[] {
  return episodeJobs({ family, knobs: {}, batchEpisodes: n, groupSize: 1, iteration, rng: new Rng(iteration) }).map(
    (job) => ({
      run: 'test-run',
      session,
      job,
      tokenizer: { name: tokenizer.name, sha256: tokenizer.sha256 },
      rollout: {},
      sampler: { kind: 'expert' },
      stepDelayMs: 0,
    }),
  );
}

/** The same episode run in this process, as the trainer does without a queue. */
async function inProcess(m: EpisodeMessage): Promise<EpisodeRecord> {
  const { config, layout } = resolveRolloutConfig({ input: m.rollout, tokenizer });
  const [r] = await runEpisodes({
    episodes: [episodeOfJob(m.job, createEnvironment)],
    config,
    layout,
    actor: textPolicySampler({
      tokenizer,
      policy: family.expert,
      rng: new Rng(mixSeed(m.job.seed, m.job.policyVersion)),
    }),
    policyVersion: () => m.job.policyVersion,
  });
  return r!;
}

describe.skipIf(!available)('the rollout queue (real redis-server, real BullMQ workers)', { timeout: 120_000 }, () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  /** A fresh queue name per test (tests share one Redis), the trainer's side and `workers` workers around `run`. */
  async function setup(
    options: {
      workers?: number;
      timeoutMs?: number;
      run?: (m: EpisodeMessage, s: AbortSignal) => Promise<EpisodeRecord>;
    } = {},
  ) {
    const name = `test-${++queueNames}`;
    const episodes = new RolloutWorker();
    const run = options.run ?? ((m: EpisodeMessage, s: AbortSignal) => episodes.run(m, s));
    const workers = await Promise.all(
      Array.from({ length: options.workers ?? 1 }, () =>
        startQueueWorker({ url: redis.url, name, concurrency: 2, run }),
      ),
    );
    const queue = await EpisodeQueue.open({ url: redis.url, name, timeoutMs: options.timeoutMs ?? 30_000 });
    return {
      queue,
      close: async () => {
        await Promise.all(workers.map((w) => w.close()));
        await queue.close();
      },
    };
  }

  it('runs every job once on the workers, in job order, each record equal to the in-process one', async () => {
    const { queue, close } = await setup({ workers: 2 });
    try {
      const messages = batch(6);
      const out = await queue.runBatch({ messages, attempts: 3 });
      expect(out.failed).toEqual([]);
      expect(out.retried).toBe(0);
      expect(out.records.map((r) => r.episodeId)).toEqual(messages.map((m) => m.job.episodeId));
      for (let i = 0; i < messages.length; i++) expect(out.records[i]).toEqual(await inProcess(messages[i]!));
      expect(out.queueMs).toHaveLength(6);
    } finally {
      await close();
    }
  });

  it('a job whose first attempt fails runs again and its record is taken once; one that always fails is given up with its reason', async () => {
    const tries = new Map<string, number>();
    const episodes = new RolloutWorker();
    const { queue, close } = await setup({
      run: async (m, s) => {
        const n = (tries.get(m.job.episodeId) ?? 0) + 1;
        tries.set(m.job.episodeId, n);
        if (m.job.episodeId === 'it1-ep0' && n === 1) throw new Error('the sandbox broke');
        if (m.job.episodeId === 'it1-ep2') throw new Error('the task folder is gone');
        return episodes.run(m, s);
      },
    });
    try {
      const out = await queue.runBatch({ messages: batch(4), attempts: 2 });
      expect(out.records.map((r) => r.episodeId)).toEqual(['it1-ep0', 'it1-ep1', 'it1-ep3']);
      // The reason names whose fault it was: a plain error thrown in the worker is the environment's.
      expect(out.failed).toEqual([{ episodeId: 'it1-ep2', reason: 'environment fault: the task folder is gone' }]);
      expect(out.retried).toBe(2); // ep0 ran twice, ep2 ran twice
      expect(tries.get('it1-ep0')).toBe(2);
      expect(tries.get('it1-ep2')).toBe(2);
    } finally {
      await close();
    }
  });

  it('a rejected job (a tokenizer this worker lacks) fails at once, without retries', async () => {
    const { queue, close } = await setup();
    try {
      const messages = batch(1).map((m) => ({ ...m, tokenizer: { name: 'word', sha256: 'not-this-one' } }));
      const out = await queue.runBatch({ messages, attempts: 3 });
      expect(out.records).toEqual([]);
      expect(out.failed[0]!.reason).toMatch(/tokenizer word on this worker .* differs from the trainer's/);
      expect(out.retried).toBe(0);
    } finally {
      await close();
    }
  });

  it('with no worker, the batch fails with a clear QueueError within its deadline', async () => {
    const { queue, close } = await setup({ workers: 0, timeoutMs: 1_500 });
    try {
      const t0 = Date.now();
      const e = await queue.runBatch({ messages: batch(2), attempts: 1 }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(QueueError);
      expect((e as Error).message).toMatch(
        /no rollout worker took episode jobs .* start one with: crl worker --queue redis:/,
      );
      expect(Date.now() - t0).toBeLessThan(30_000);
    } finally {
      await close();
    }
  });

  it('an unreachable Redis is a QueueError naming the URL', async () => {
    const e = await EpisodeQueue.open({ url: 'redis://127.0.0.1:1', name: 'x', timeoutMs: 1_000 }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(QueueError);
    expect((e as Error).message).toMatch(/cannot reach the queue's Redis at redis:\/\/127\.0\.0\.1:1/);
  });

  it('drops the waiting jobs of an earlier trainer session of the same run, not its own or other runs', async () => {
    const { queue, close } = await setup({ workers: 0 });
    try {
      // Jobs of three kinds put on the queue without a worker: another session, another run, this session.
      const old = batch(2, 1, 'old');
      const other = batch(1, 1, 'x').map((m) => ({ ...m, run: 'other-run' }));
      const mine = batch(1, 2, 'new');
      void queue.runBatch({ messages: [...old, ...other, ...mine], attempts: 1 }).catch(() => undefined);
      await waitFor(async () => (await queue.dropOtherSessions('test-run', 'new')) === 2, {
        what: 'the two jobs of the old session to be dropped',
      });
    } finally {
      await close();
    }
  });

  it('Redis killed and restarted empty mid-batch: the jobs it lost are put back, every record arrives once', async () => {
    const own = await startRedis();
    const name = 'restart';
    const started = new Set<string>();
    let gate!: () => void;
    const opened = new Promise<void>((r) => (gate = r));
    const episodes = new RolloutWorker();
    const worker = await startQueueWorker({
      url: own.url,
      name,
      concurrency: 4,
      run: async (m, s) => {
        started.add(m.job.episodeId);
        await opened;
        return episodes.run(m, s);
      },
    });
    const queue = await EpisodeQueue.open({ url: own.url, name, timeoutMs: 60_000 });
    let restarted: RedisProcess | null = null;
    try {
      const messages = batch(3);
      const done = queue.runBatch({ messages, attempts: 3 });
      await waitFor(() => started.size === 3, { what: 'all three jobs to start' });
      await own.kill();
      restarted = await startRedis({ port: own.port });
      gate();
      const out = await done;
      expect(out.records.map((r) => r.episodeId)).toEqual(messages.map((m) => m.job.episodeId));
      expect(new Set(out.records.map((r) => r.episodeId)).size).toBe(3);
    } finally {
      gate();
      await worker.close();
      await queue.close();
      await restarted?.stop();
      await own.stop();
    }
  });
});
