import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EpisodeRecordSchema, type EpisodeRecord } from '../rollout/record.ts';
import { episodeJobId, EpisodeMessageSchema, type EpisodeMessageInput } from './episode-message.ts';
import { refusalReason } from './job-refusal.ts';
import { resultSignatureProblem, signJob } from './job-signature.ts';
import { QueueError, redactedUrl, redisConnection, shutDown, withDeadline } from './redis-connection.ts';
import { WorkerResultSchema } from './worker-result.ts';

/** What the trainer sees of a batch while it runs (progress lines). */
export interface BatchProgress {
  workers: number;
  done: number;
  inFlight: number;
  waiting: number;
  /** Jobs that ran again after a failure or a lost worker. */
  retried: number;
  failed: number;
}

export interface BatchOutcome {
  /** One record per finished job, in the order the jobs were given (not the order they finished). */
  records: EpisodeRecord[];
  /** Jobs that ran more than once (a failed attempt, a worker lost mid-episode, or Redis lost the job after it started). */
  retried: number;
  /** Jobs given up after their last attempt, with the reason of that attempt. */
  failed: { episodeId: string; reason: string }[];
  /** Per finished job: ms from being added to the trainer reading its record, minus the episode's own run time. */
  queueMs: number[];
}

/**
 * How often the trainer asks whether its pending jobs finished (ms): one pipelined HGET of each
 * job's finishedOn, a few bytes per job, so a record waits about half of this on average; and how
 * often it reads every pending job whole, counts workers and reports progress.
 */
const POLL_MS = 5;
const SWEEP_MS = 1_000;

/**
 * The trainer's side of the rollout queue (docs/distributed.md): puts one iteration's episode
 * jobs on a BullMQ queue and waits for every one to finish or be given up. BullMQ delivers a job
 * at least once (a worker lost mid-episode leaves a stalled job that another worker runs again),
 * so a record is accepted once per job id and only from this trainer session's jobs. The trainer
 * asks after its pending jobs every POLL_MS (BullMQ's QueueEvents would push completions, but its
 * blocking connection cannot be closed while Redis is away, which would keep a failed trainer
 * alive); a job that Redis lost (a restart without persistence) is added again, and a sweep every
 * second counts the workers and notices when nothing moves.
 */
export class EpisodeQueue {
  private constructor(
    private readonly queue: Queue,
    /** A plain client for the cheap finished-yet reads (BullMQ keeps its own clients to itself). */
    private readonly client: Redis,
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly secret: string | null,
    private readonly jobs: typeof Job,
  ) {}

  /**
   * Connects, or throws a QueueError when Redis does not answer within `timeoutMs`. With a
   * `secret` (CRL_QUEUE_SECRET, shared with the workers) every job is signed and only results
   * signed with it are taken; without one (the default) jobs go unsigned and results are taken
   * as they come (docs/distributed.md, "Who chooses what a worker runs").
   */
  static async open(options: {
    url: string;
    name: string;
    timeoutMs: number;
    secret?: string | null;
  }): Promise<EpisodeQueue> {
    // Loaded here, not at the top: every crl command imports this module and few use the queue;
    // the two packages cost about 0.2 s of CPU at each crl start.
    const [{ Job, Queue }, { Redis }] = await Promise.all([import('bullmq'), import('ioredis')]);
    const connection = redisConnection(options.url);
    const queue = new Queue(options.name, { connection: { ...connection, enableAutoPipelining: true } });
    const client = new Redis({ ...connection, enableAutoPipelining: true, lazyConnect: false });
    // Connection errors are reported by the deadlines below; an 'error' without a listener would crash.
    queue.on('error', () => {});
    client.on('error', () => {});
    const where = redactedUrl(options.url);
    try {
      await withDeadline(
        Promise.all([queue.waitUntilReady(), client.ping()]),
        options.timeoutMs,
        () =>
          `cannot reach the queue's Redis at ${where} within ${Math.round(options.timeoutMs / 1000)} s; start redis-server or check --queue`,
      );
    } catch (e) {
      client.disconnect();
      await shutDown([queue], 0);
      throw e;
    }
    return new EpisodeQueue(queue, client, where, options.timeoutMs, options.secret ?? null, Job);
  }

  /** Removes the waiting jobs of this run's earlier trainer sessions (a killed trainer's batch), so workers skip them. */
  async dropOtherSessions(run: string, session: string): Promise<number> {
    const jobs = await this.redis(() => this.queue.getJobs(['waiting', 'delayed', 'prioritized']));
    let dropped = 0;
    for (const job of jobs) {
      const m = EpisodeMessageSchema.safeParse(job?.data);
      if (!job || !m.success || m.data.run !== run || m.data.session === session) continue;
      await this.redis(() => job.remove().catch(() => undefined));
      dropped++;
    }
    return dropped;
  }

  /**
   * Runs the batch on the workers and waits for all of it. Throws a QueueError when no worker is
   * there, or nothing starts or finishes, for the queue's timeout.
   */
  async runBatch(options: {
    messages: readonly EpisodeMessageInput[];
    /** Runs per job before it counts as failed. */
    attempts: number;
    onProgress?: (p: BatchProgress) => void;
  }): Promise<BatchOutcome> {
    const secret = this.secret;
    const messages = options.messages.map((m) => {
      const { signature: _, ...parsed } = EpisodeMessageSchema.parse(m);
      return secret ? { ...parsed, signature: signJob(parsed, secret) } : parsed;
    });
    const ids = messages.map(episodeJobId);
    const addedAt = new Map<string, number>();
    const add = async (indices: number[]) => {
      const now = Date.now();
      for (const i of indices) addedAt.set(ids[i]!, now);
      await this.redis(() =>
        this.queue.addBulk(
          indices.map((i) => ({
            name: 'episode',
            data: messages[i]!,
            opts: {
              jobId: ids[i]!,
              attempts: options.attempts,
              backoff: { type: 'fixed', delay: 200 },
              removeOnComplete: { age: 3_600 },
              removeOnFail: { age: 24 * 3_600 },
            },
          })),
        ),
      );
    };
    await add(messages.map((_, i) => i));

    const index = new Map(ids.map((id, i) => [id, i]));
    const records = new Array<EpisodeRecord | undefined>(ids.length);
    const failed: BatchOutcome['failed'] = [];
    const queueMs: number[] = [];
    const retried = new Set<string>();
    /** Jobs seen started: one that Redis then loses runs again from the start once re-added. */
    const started = new Set<string>();
    const pending = new Set(ids);

    // The job's final state, if it has one; re-added when Redis no longer knows it.
    const check = async (id: string, job: Job | undefined, readAt: number): Promise<boolean> => {
      const i = index.get(id)!;
      if (!job) {
        if (started.has(id)) retried.add(id);
        await add([i]);
        return false;
      }
      if (job.processedOn) started.add(id);
      // Another start of the same job: BullMQ's attempt counter (ats) grows at every start, a
      // stalled job's (stc) when a lost worker's job goes back to wait; both stay on the job's
      // hash through its completion, which is where the trainer reads them.
      if (job.attemptsStarted > 1 || job.stalledCounter > 0) retried.add(id);
      if (!job.finishedOn) return false;
      // Finished: completed with a return value, or failed for good with a reason (a failed attempt
      // with attempts left is not finished). Only an odd job costs another round trip.
      const state =
        job.returnvalue != null ? 'completed' : job.failedReason ? 'failed' : await this.redis(() => job.getState());
      if (state === 'completed') {
        const r = WorkerResultSchema.safeParse(job.returnvalue);
        const unsigned = r.success ? resultSignatureProblem({ jobId: id, ...r.data, secret }) : null;
        const record = r.success ? EpisodeRecordSchema.safeParse(r.data.record) : null;
        if (unsigned) {
          failed.push({ episodeId: messages[i]!.job.episodeId, reason: refusalReason(unsigned) });
        } else if (!r.success || !record?.success || record.data.episodeId !== messages[i]!.job.episodeId) {
          failed.push({ episodeId: messages[i]!.job.episodeId, reason: 'the worker returned no valid record for it' });
        } else {
          records[i] = record.data;
          queueMs.push(Math.max(0, readAt - addedAt.get(id)! - r.data.runMs));
        }
      } else if (state === 'failed') {
        failed.push({ episodeId: messages[i]!.job.episodeId, reason: job.failedReason || 'no reason given' });
      } else return false;
      pending.delete(id);
      return true;
    };

    let lastMove = Date.now();
    let lastSweep = 0;
    let seen = '';
    let workersSeenAt = Date.now();
    while (pending.size > 0) {
      await new Promise((res) => setTimeout(res, POLL_MS));
      let open = [...pending];
      const sweep = Date.now() - lastSweep >= SWEEP_MS;
      if (!sweep) {
        const finished = await this.redis(() =>
          Promise.all(open.map((id) => this.client.hget(this.queue.toKey(id), 'finishedOn'))),
        );
        open = open.filter((_, k) => finished[k] !== null);
        if (open.length === 0) continue;
      }
      const jobs = await this.redis(() => Promise.all(open.map((id) => this.jobs.fromId(this.queue, id))));
      const readAt = Date.now();
      for (let k = 0; k < open.length; k++) await check(open[k]!, jobs[k], readAt);
      if (!sweep && pending.size > 0) continue;
      const now = Date.now();
      lastSweep = now;
      const [workers, counts] = await this.redis(() =>
        Promise.all([this.queue.getWorkersCount(), this.queue.getJobCounts('active')]),
      );
      const state = jobs.map((j) => `${j?.processedOn ?? 0}/${j?.attemptsStarted ?? 0}/${j?.finishedOn ?? 0}`).join();
      if (state !== seen) lastMove = now;
      seen = state;
      if (workers > 0) workersSeenAt = now;
      const active = Math.min(pending.size, counts.active ?? 0);
      options.onProgress?.({
        workers,
        done: ids.length - pending.size - failed.length,
        inFlight: active,
        waiting: pending.size - active,
        retried: retried.size,
        failed: failed.length,
      });
      const quiet = (since: number) => now - since > this.timeoutMs;
      if (pending.size > 0 && quiet(workersSeenAt))
        throw new QueueError(
          `no rollout worker took episode jobs from ${this.url} (queue ${this.queue.name}) for ${Math.round(this.timeoutMs / 1000)} s; start one with: crl worker --queue ${this.url}`,
        );
      if (pending.size > 0 && quiet(lastMove) && active === 0)
        throw new QueueError(
          `${workers} rollout worker(s) on ${this.url}, but no episode job started or finished for ${Math.round(this.timeoutMs / 1000)} s`,
        );
    }
    return {
      records: records.filter((r): r is EpisodeRecord => r !== undefined),
      retried: retried.size,
      failed,
      queueMs,
    };
  }

  async close(): Promise<void> {
    this.client.disconnect();
    await shutDown([this.queue]);
  }

  /** One Redis round trip, failing with a clear message when Redis is gone for the whole timeout. */
  private redis<T>(f: () => Promise<T>): Promise<T> {
    return withDeadline(
      f(),
      this.timeoutMs,
      () => `lost the queue's Redis at ${this.url}: no answer for ${Math.round(this.timeoutMs / 1000)} s`,
    );
  }
}
