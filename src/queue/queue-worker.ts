import type { Worker } from 'bullmq';
import type { EpisodeRecord } from '../rollout/record.ts';
import { episodeJobId, EpisodeMessageSchema, type EpisodeMessage } from './episode-message.ts';
import { failureReason } from './job-failure.ts';
import { JobRefused, refusalReason } from './job-refusal.ts';
import { jobSignatureProblem, signResult } from './job-signature.ts';
import { QueueError, redactedUrl, redisConnection, shutDown, withDeadline } from './redis-connection.ts';
import type { WorkerResult } from './worker-result.ts';

/**
 * How long a worker holds a job without renewing its lock, and how often workers look for jobs
 * whose lock ran out. A worker killed mid-episode (kill -9) renews nothing, so its job is back on
 * the queue for another worker within about LOCK_MS + STALLED_CHECK_MS; BullMQ renews the lock of
 * a live worker every LOCK_MS / 2 from its event loop, which an episode never blocks for long
 * (sampling happens on the engines, environments run in sandboxes or sleep).
 */
const LOCK_MS = 10_000;
const STALLED_CHECK_MS = 5_000;

/** A problem in the job itself (bad message, a tokenizer this machine does not have): running it again cannot help. */
export class JobRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobRejected';
  }
}

export interface QueueWorkerOptions {
  url: string;
  name: string;
  /** Episodes this worker runs at once. */
  concurrency: number;
  /**
   * The secret shared with the trainer (CRL_QUEUE_SECRET): jobs must carry its signature, and
   * results are signed with it. Null (the default): unsigned jobs run, signed ones are refused.
   */
  secret?: string | null;
  /** Throws JobRefused for a job this worker will not run (its bounds); called before `onStart`. */
  admit?: (message: EpisodeMessage) => void;
  /** Runs one episode; the signal fires when the worker shuts down mid-episode. */
  run: (message: EpisodeMessage, signal: AbortSignal) => Promise<EpisodeRecord>;
  /** How often a stalled job may return to the queue before it counts as failed (default 2). */
  maxStalled?: number;
  log?: (line: string) => void;
  /** Called as each job starts; `attempt` counts from 1 (a retry or a lost worker's job: 2 and up). */
  onStart?: (e: { episodeId: string; attempt: number }) => void;
  /** Called as each job ends (for progress lines and tests). */
  onJob?: (e: { episodeId: string; ok: boolean; ms: number; reason?: string }) => void;
}

/**
 * The worker's side of the rollout queue (docs/distributed.md): takes episode jobs, runs each
 * through `run`, and returns its record. A job whose signature does not verify with `secret`, or
 * whose id is not the one its message names, is refused before anything of it runs; so is one
 * that `run` refuses (JobRefused). Throwing retries the job (BullMQ's attempts); JobRejected and
 * refusals fail it at once, a refusal with a reason the trainer recognizes (job-refusal.ts), any
 * other failure with its fault kind in the reason (job-failure.ts).
 * Resolves once connected; throws a QueueError when Redis does not answer within
 * `connectTimeoutMs`.
 */
export async function startQueueWorker(
  options: QueueWorkerOptions & { connectTimeoutMs?: number },
): Promise<{ close: () => Promise<void>; worker: Worker }> {
  const log = options.log ?? (() => {});
  const secret = options.secret ?? null;
  const where = redactedUrl(options.url);
  // Loaded here, not at the top: see EpisodeQueue.open.
  const { UnrecoverableError, Worker } = await import('bullmq');
  const worker = new Worker<unknown, WorkerResult>(
    options.name,
    async (job, _token, signal) => {
      const jobId = job.id ?? '';
      const refuse = (why: string): never => {
        // Named by the job id: an unverified message's own episode id is the sender's word.
        options.onJob?.({ episodeId: jobId, ok: false, ms: 0, reason: refusalReason(why) });
        throw new UnrecoverableError(refusalReason(why));
      };
      const unsigned = jobSignatureProblem(job.data, secret);
      if (unsigned) refuse(unsigned);
      const parsed = EpisodeMessageSchema.safeParse(job.data);
      if (!parsed.success)
        throw new UnrecoverableError(`not an episode job: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      // The signature covers run, session and episode id; the job id must be made of them, so a
      // signed message cannot be queued again under a fresh id.
      if (jobId !== episodeJobId(parsed.data))
        refuse(`the job's id ${jobId} is not the one its message names (${episodeJobId(parsed.data)})`);
      try {
        options.admit?.(parsed.data);
      } catch (e) {
        if (e instanceof JobRefused) refuse(e.message);
        throw e;
      }
      const start = performance.now();
      const episodeId = parsed.data.job.episodeId;
      options.onStart?.({ episodeId, attempt: job.attemptsStarted });
      try {
        const record = await options.run(parsed.data, signal ?? new AbortController().signal);
        const ms = performance.now() - start;
        options.onJob?.({ episodeId, ok: true, ms });
        return {
          record,
          runMs: ms,
          ...(secret ? { signature: signResult({ jobId, record, runMs: ms }, secret) } : {}),
        };
      } catch (e) {
        // A failure's reason names whose fault it was (job-failure.ts): the trainer counts a job
        // given up after its attempts as a faulted episode of that kind.
        const reason = e instanceof JobRefused ? refusalReason(e.message) : failureReason(e);
        options.onJob?.({ episodeId, ok: false, ms: performance.now() - start, reason });
        if (e instanceof JobRefused || e instanceof JobRejected) throw new UnrecoverableError(reason);
        throw new Error(reason, { cause: e });
      }
    },
    {
      connection: redisConnection(options.url),
      concurrency: options.concurrency,
      lockDuration: LOCK_MS,
      stalledInterval: STALLED_CHECK_MS,
      maxStalledCount: options.maxStalled ?? 2,
      autorun: false,
    },
  );
  let lastError = '';
  worker.on('error', (e) => {
    // Reconnects are ioredis's; say once per distinct problem that they are happening.
    if (e.message !== lastError) log(`crl worker: queue connection: ${e.message} (retrying)`);
    lastError = e.message;
  });
  try {
    await withDeadline(
      worker.waitUntilReady(),
      options.connectTimeoutMs ?? 30_000,
      () => `cannot reach the queue's Redis at ${where}; start redis-server or check --queue`,
    );
  } catch (e) {
    await shutDown([{ close: () => worker.close(true), disconnect: () => worker.disconnect() }], 0);
    throw e instanceof QueueError ? e : new QueueError(`${where}: ${(e as Error).message}`);
  }
  void worker.run().catch((e: Error) => log(`crl worker: stopped: ${e.message}`));
  return {
    worker,
    close: async () => {
      await worker.close();
    },
  };
}
