/**
 * The queue's trust boundary on a real redis-server (docs/distributed.md, "Who chooses what a
 * worker runs"): the trainer's side (EpisodeQueue) signs its jobs, real BullMQ workers (the
 * RolloutWorker behind them) verify them and keep to their bounds, and the trainer takes only
 * results signed with its secret. Every refusal must happen before the episode runs and reach
 * the trainer as a reason it recognizes.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { EpisodeQueue } from '../../queue/episode-queue.ts';
import { episodeJobId, type EpisodeMessage } from '../../queue/episode-message.ts';
import { refusedWhy } from '../../queue/job-refusal.ts';
import { signJob } from '../../queue/job-signature.ts';
import { startQueueWorker } from '../../queue/queue-worker.ts';
import { redisConnection } from '../../queue/redis-connection.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../../queue/testing/redis-server.ts';
import { Rng } from '../../util/random.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { episodeJobs } from '../train/iteration-stages.ts';
import { RolloutWorker } from './rollout-worker.ts';

const available = redisAvailable('queue trust tests');
const tokenizer = loadTokenizer('word');

let queueNames = 0;
function batch(n: number): EpisodeMessage[] {
  const family = getFamily('chunk-sum');
  return episodeJobs({ family, knobs: {}, batchEpisodes: n, groupSize: 1, iteration: 1, rng: new Rng(1) }).map(
    (job) => ({
      run: 'trust-run',
      session: 's1',
      job,
      tokenizer: { name: tokenizer.name, sha256: tokenizer.sha256 },
      rollout: {},
      sampler: { kind: 'expert' },
      stepDelayMs: 0,
    }),
  );
}

describe.skipIf(!available)(
  'the queue trust boundary (real redis-server, real BullMQ workers)',
  { timeout: 60_000 },
  () => {
    let redis: RedisProcess;
    const base = realpathSync(mkdtempSync(join(tmpdir(), 'crl-queue-trust-')));
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.stop();
      rmSync(base, { recursive: true, force: true });
    });

    /** A fresh queue; one worker with `workerSecret` around a RolloutWorker, counting the episodes it really ran. */
    async function setup(options: {
      trainerSecret: string | null;
      workerSecret: string | null;
      taskRoot?: string;
      allowEngines?: string[];
    }) {
      const name = `trust-${++queueNames}`;
      const episodes = new RolloutWorker({
        ...(options.taskRoot ? { taskRoot: options.taskRoot } : {}),
        ...(options.allowEngines ? { allowEngines: options.allowEngines } : {}),
      });
      const ran: string[] = [];
      const refused: string[] = [];
      const worker = await startQueueWorker({
        url: redis.url,
        name,
        concurrency: 2,
        secret: options.workerSecret,
        admit: (m) => void episodes.admit(m),
        run: (m, s) => {
          ran.push(m.job.episodeId);
          return episodes.run(m, s);
        },
        onJob: (e) => {
          if (!e.ok && e.reason && refusedWhy(e.reason) !== null) refused.push(e.episodeId);
        },
      });
      const queue = await EpisodeQueue.open({ url: redis.url, name, timeoutMs: 20_000, secret: options.trainerSecret });
      return {
        name,
        queue,
        ran,
        refused,
        close: async () => {
          await worker.close();
          await queue.close();
        },
      };
    }

    it('the right secret: every job runs and its signed record is taken', async () => {
      const t = await setup({ trainerSecret: 'a', workerSecret: 'a' });
      try {
        const out = await t.queue.runBatch({ messages: batch(3), attempts: 2 });
        expect(out.failed).toEqual([]);
        expect(out.records.map((r) => r.episodeId)).toEqual(['it1-ep0', 'it1-ep1', 'it1-ep2']);
        expect(t.ran.sort()).toEqual(['it1-ep0', 'it1-ep1', 'it1-ep2']);
      } finally {
        await t.close();
      }
    });

    it('a worker with another secret refuses every job before it runs, and the trainer sees why', async () => {
      const t = await setup({ trainerSecret: 'a', workerSecret: 'b' });
      try {
        const out = await t.queue.runBatch({ messages: batch(2), attempts: 3 });
        expect(out.records).toEqual([]);
        expect(out.failed.map((f) => f.episodeId)).toEqual(['it1-ep0', 'it1-ep1']);
        for (const f of out.failed)
          expect(refusedWhy(f.reason)).toMatch(/does not match this worker's CRL_QUEUE_SECRET/);
        expect(out.retried).toBe(0); // refused at once: no attempt left for another try
        expect(t.ran).toEqual([]);
      } finally {
        await t.close();
      }
    });

    it('unsigned jobs are refused by a worker with a secret; signed ones by a worker without', async () => {
      for (const [trainerSecret, workerSecret, why] of [
        [null, 'a', /not signed/],
        ['a', null, /signed, but this worker has no CRL_QUEUE_SECRET/],
      ] as const) {
        const t = await setup({ trainerSecret, workerSecret });
        try {
          const out = await t.queue.runBatch({ messages: batch(1), attempts: 2 });
          expect(out.failed).toHaveLength(1);
          expect(refusedWhy(out.failed[0]!.reason)).toMatch(why);
          expect(t.ran).toEqual([]);
        } finally {
          await t.close();
        }
      }
    });

    it('a hand-made job: one field changed after signing, or a signed job queued again under a new id, is refused', async () => {
      const t = await setup({ trainerSecret: 'a', workerSecret: 'a' });
      const writer = new Queue(t.name, { connection: redisConnection(redis.url) });
      try {
        const [m] = batch(1);
        const signed = { ...m!, signature: signJob(m!, 'a') };
        const tampered = { ...signed, job: { ...signed.job, seed: signed.job.seed + 1 } };
        const id = episodeJobId(m!);
        await writer.add('episode', tampered, { jobId: id });
        await writer.add('episode', signed, { jobId: `${id}-again` });
        await waitFor(() => t.refused.length === 2, { what: 'both hand-made jobs to be refused' });
        const reasons = await Promise.all([id, `${id}-again`].map(async (j) => (await writer.getJob(j))?.failedReason));
        expect(refusedWhy(reasons[0] ?? '')).toMatch(/changed after signing/);
        expect(refusedWhy(reasons[1] ?? '')).toMatch(/is not the one its message names/);
        expect(t.ran).toEqual([]);
      } finally {
        await writer.close();
        await t.close();
      }
    });

    it("a task folder outside the worker's root is refused, signed or not; one inside gets past the bounds", async () => {
      const root = join(base, 'root');
      mkdirSync(join(root, 'inside'), { recursive: true });
      mkdirSync(join(base, 'outside'), { recursive: true });
      const t = await setup({ trainerSecret: 'a', workerSecret: 'a', taskRoot: root });
      try {
        const harbor = (episodeId: string, taskDir: string): EpisodeMessage => ({
          ...batch(1)[0]!,
          job: { episodeId, env: { kind: 'harbor', taskDir, exposeSolution: true }, seed: 0, policyVersion: 0 },
        });
        const out = await t.queue.runBatch({
          messages: [
            harbor('out', join(base, 'outside')),
            harbor('dotdot', join(root, '..', 'outside')),
            harbor('in', join(root, 'inside')),
          ],
          attempts: 1,
        });
        const reasons = Object.fromEntries(out.failed.map((f) => [f.episodeId, f.reason]));
        expect(refusedWhy(reasons.out ?? '')).toMatch(/outside --task-root/);
        expect(refusedWhy(reasons.dotdot ?? '')).toMatch(/outside --task-root/);
        // The folder inside the root passed the bounds and ran (an empty folder is no task: it fails, not refused).
        expect(t.ran).toEqual(['in']);
        expect(refusedWhy(reasons.in ?? 'missing')).toBeNull();
      } finally {
        await t.close();
      }
    });

    it("an engine off the worker's --allow-engines is refused before anything connects to it", async () => {
      const connections: Socket[] = [];
      const listener = createServer((c) => connections.push(c.destroy()));
      await new Promise<void>((res) => listener.listen(0, '127.0.0.1', res));
      const port = (listener.address() as AddressInfo).port;
      // A worker without the secret: the allow list is what holds.
      const t = await setup({ trainerSecret: null, workerSecret: null, allowEngines: ['http://127.0.0.1:1'] });
      try {
        const [m] = batch(1);
        const sampler = { kind: 'engines', urls: [`http://127.0.0.1:${port}`], protocol: 'sglang', weightVersion: '0' };
        const out = await t.queue.runBatch({ messages: [{ ...m!, sampler } as EpisodeMessage], attempts: 1 });
        expect(refusedWhy(out.failed[0]?.reason ?? '')).toMatch(/may not reach: http:\/\/127\.0\.0\.1:\d+ /);
        expect(t.ran).toEqual([]);
        expect(connections).toEqual([]);
      } finally {
        await t.close();
        await new Promise((res) => listener.close(res));
      }
    });

    it("a result not signed with the trainer's secret (a stranger's worker) is refused, not trained on", async () => {
      const name = `trust-${++queueNames}`;
      const [m] = batch(1);
      const stranger = new Worker(name, async () => ({ record: { episodeId: m!.job.episodeId }, runMs: 1 }), {
        connection: redisConnection(redis.url),
      });
      const queue = await EpisodeQueue.open({ url: redis.url, name, timeoutMs: 20_000, secret: 'a' });
      try {
        const out = await queue.runBatch({ messages: [m!], attempts: 1 });
        expect(out.records).toEqual([]);
        expect(refusedWhy(out.failed[0]?.reason ?? '')).toMatch(/result is not signed/);
      } finally {
        await stranger.close();
        await queue.close();
      }
    });
  },
);
