import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ConfigError } from '../../config/config-error.ts';
import { engineUrls } from '../../config/execution-config.ts';
import type { TrainConfig } from '../../config/train-config.ts';
import { EpisodeQueue, type BatchProgress } from '../../queue/episode-queue.ts';
import type { EpisodeMessageInput } from '../../queue/episode-message.ts';
import { refusedWhy } from '../../queue/job-refusal.ts';
import { failureOf } from '../../queue/job-failure.ts';
import { QUEUE_SECRET_ENV, queueSecretFromEnv } from '../../queue/job-signature.ts';
import { QueueError } from '../../queue/redis-connection.ts';
import { FaultPolicySchema, givenUpRecord, isFault, retryEpisodeId } from '../../rollout/faults.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { episodeJobs } from '../train/iteration-stages.ts';
import { withinStaleness } from './queue-staleness.ts';
import type { ActorKind } from '../train/trainer-models.ts';
import type { TrainingRun, TrainingStages } from '../train/training-stages.ts';

/** Jobs given up after their last attempt, one JSON line each (episode id, iteration, reason). */
export const FAILED_EPISODES_FILE = 'failed-episodes.jsonl';

/** Progress lines at most this often while a batch runs (ms), and always when the batch ends. */
const PROGRESS_EVERY_MS = 5_000;

/**
 * The training loop's `sample` stage on rollout workers (docs/distributed.md): the iteration's
 * episode jobs, the same ones the trainer would run itself (same ids, task seeds, policy version),
 * go to the Redis queue; `crl worker` processes run them against the engine replicas (or the
 * scripted expert) and the trainer takes each record once, in job order. An episode that ended in
 * a fault goes to the queue again as a new job (`<id>-retry<n>`), up to `faults.retries` times, as
 * in the trainer's own process (docs/faults.md). A job the queue gave up on (every attempt failed,
 * or its workers were lost too often) is a faulted episode of the kind its worker named: left out,
 * counted in `rollout/fault_*` and held to faults.maxFraction like any fault. `metrics` gains
 * `rollout/retried` (jobs that ran again on the workers) and `rollout/failed` (jobs given up);
 * failed jobs and their reasons are appended to failed-episodes.jsonl in the run directory. Jobs are signed with `secret`
 * (CRL_QUEUE_SECRET unless given); a job a worker refused, or a result that does not verify, ends
 * the run with a QueueError naming them (docs/distributed.md, "Who chooses what a worker runs").
 */
export async function queueSampling(options: {
  config: TrainConfig;
  actor: ActorKind;
  runDir: string;
  log: (line: string) => void;
  /** The secret shared with the workers; undefined: CRL_QUEUE_SECRET, null: none (unsigned jobs). */
  secret?: string | null;
}): Promise<{ wrap: (stages: TrainingStages, run: TrainingRun) => TrainingStages; close: () => Promise<void> }> {
  const { config, log } = options;
  const q = config.queue;
  if (!q) throw new Error('internal: queueSampling without config.queue');
  if (options.actor === 'policy' && !config.engine)
    throw new ConfigError([
      'queue: rollout workers sample the policy on engine replicas; add --engine-url (crl serve processes), or use --actor expert',
    ]);
  if (options.actor === 'expert' && config.engine)
    throw new ConfigError(['engine: the scripted-expert actor (--actor expert) samples no engine; drop --engine-url']);
  const secret = options.secret === undefined ? queueSecretFromEnv() : options.secret;
  if (secret === null)
    log(
      `[queue] ${QUEUE_SECRET_ENV} is not set: episode jobs go unsigned, workers started with a secret refuse them, and whoever can write to the queue chooses what workers run and which records this run trains on`,
    );
  const queue = await EpisodeQueue.open({ url: q.url, name: q.name, timeoutMs: q.timeoutSec * 1000, secret });
  const runKey = createHash('sha256').update(resolve(options.runDir)).digest('hex').slice(0, 16);
  const session = randomBytes(6).toString('hex');
  try {
    const dropped = await queue.dropOtherSessions(runKey, session);
    if (dropped > 0) log(`[queue] dropped ${dropped} waiting job(s) of this run's earlier trainer`);
  } catch (e) {
    await queue.close();
    throw e;
  }
  // Per iteration: with sampling ahead (docs/async.md) the next batch runs before this one's line is written.
  const statsOf = new Map<number, { retried: number; failed: number; staleDropped: number }>();
  const { retries } = FaultPolicySchema.parse(config.faults ?? {});

  const wrap = (stages: TrainingStages, run: TrainingRun): TrainingStages => ({
    ...stages,
    sample: async ({ iteration, rng, version }) => {
      // The job's policyVersion is the oldest weights it may be sampled with: those published as
      // it is queued. Sampling ahead (train/async-loop.ts) queues batch k while older weights train, and
      // a worker then samples with those or any newer ones (docs/async.md); the synchronous loop
      // queues batch k with the weights after k - 1 updates, exactly those.
      const floor = version ? version() : iteration - 1;
      const ahead = (config.maxStaleness ?? 0) > 0;
      const jobs = episodeJobs({
        family: run.family,
        knobs: config.env.knobs,
        batchEpisodes: config.batchEpisodes,
        groupSize: config.groupSize,
        iteration,
        rng,
      }).map((job) => ({ ...job, policyVersion: floor }));
      const sampler: EpisodeMessageInput['sampler'] = config.engine
        ? {
            kind: 'engines',
            urls: engineUrls(config.engine.url),
            protocol: 'sglang', // the config refuses 'vllm' with a queue: it needs adapter pushes
            weightVersion: String(floor),
            ...(ahead ? { orNewer: true as const } : {}),
          }
        : { kind: 'expert' };
      const messages: EpisodeMessageInput[] = jobs.map((job) => ({
        run: runKey,
        session,
        job,
        tokenizer: { name: run.tokenizer.name, sha256: run.tokenizer.sha256 },
        // The resolved settings (the family's sizes under the flags), so a worker runs what the trainer would.
        rollout: run.rollout,
        sampler,
        stepDelayMs: config.env.stepDelayMs ?? 0,
      }));
      const stats = { retried: 0, failed: 0, staleDropped: 0 };
      statsOf.set(iteration, stats);
      /** Episodes whose job the queue gave up: faulted records that already had the queue's attempts. */
      const givenUp = new Set<string>();
      /**
       * One batch of jobs on the workers: a record per job, in job order. A job the queue gave up
       * on is a faulted episode (givenUpRecord, its kind from the worker's reason): left out of the
       * update, counted in rollout/fault_*, and held to faults.maxFraction with the others.
       */
      const batch = async (batchMessages: readonly EpisodeMessageInput[], what: string) => {
        let shownAt = 0;
        const show = (p: BatchProgress, force = false) => {
          if (!force && Date.now() - shownAt < PROGRESS_EVERY_MS) return;
          shownAt = Date.now();
          const engines = run.models.engines ? `; engines ${run.models.engines.describe()}` : '';
          log(
            `[queue] iteration ${iteration}${what}: ${p.done}/${batchMessages.length} done, ${p.inFlight} in flight, ${p.waiting} waiting, ${p.retried} retried, ${p.failed} failed; ${p.workers} worker(s)${engines}`,
          );
        };
        let last: BatchProgress | null = null;
        const out = await queue.runBatch({
          messages: batchMessages,
          attempts: q.attempts,
          onProgress: (p) => {
            last = p;
            show(p);
          },
        });
        if (last) show(last, true);
        stats.retried += out.retried;
        stats.failed += out.failed.length;
        for (const f of out.failed) {
          appendFileSync(join(run.paths.root, FAILED_EPISODES_FILE), JSON.stringify({ iteration, ...f }) + '\n');
          log(`[queue] iteration ${iteration}: episode ${f.episodeId} failed: ${f.reason}`);
        }
        const refused = out.failed.filter((f) => refusedWhy(f.reason) !== null);
        if (refused.length > 0) throw refusedError(iteration, refused);
        const records = new Map(out.records.map((r) => [r.episodeId, r]));
        const failed = new Map(out.failed.map((f) => [f.episodeId, f.reason]));
        return batchMessages.map(({ job }) => {
          const record = records.get(job.episodeId);
          if (record) return record;
          const reason = failed.get(job.episodeId);
          if (reason === undefined) throw new Error(`internal: the queue returned nothing for ${job.episodeId}`);
          givenUp.add(job.episodeId);
          const { kind, message } = failureOf(reason);
          return givenUpRecord({
            episodeId: job.episodeId,
            env: job.env.kind === 'family' ? job.env.family : `harbor:${basename(job.env.taskDir)}`,
            seed: job.seed,
            tokenizer: run.layout.tokenizerName,
            fault: kind,
            message: `the queue gave its job up: ${message}`,
            contextWindow: run.rollout.contextWindow,
            maxWindows: run.rollout.maxWindows,
          });
        });
      };
      const final = await batch(messages, '');
      // Faulted episodes run again as new jobs, on whichever worker takes them (docs/faults.md),
      // as the trainer's own process would run them: same task and seed, a fresh environment. A
      // job the queue gave up already ran its attempts: it is not queued once more.
      const superseded: EpisodeRecord[] = [];
      const messageOf = new Map(messages.map((m) => [m.job.episodeId, m]));
      for (let attempt = 1; attempt <= retries; attempt++) {
        const again = final.flatMap((r, i) => (isFault(r) && !givenUp.has(r.episodeId) ? [i] : []));
        if (again.length === 0) break;
        const base = (i: number) => messageOf.get(final[i]!.episodeId.replace(/-retry\d+$/, ''))!;
        const retryMessages = again.map((i) => ({
          ...base(i),
          job: { ...base(i).job, episodeId: retryEpisodeId(final[i]!.episodeId, attempt) },
        }));
        const records = new Map(
          (await batch(retryMessages, ` (faults run again, attempt ${attempt})`)).map((r) => [r.episodeId, r]),
        );
        again.forEach((i, k) => {
          superseded.push(final[i]!);
          final[i] = records.get(retryMessages[k]!.job.episodeId)!;
        });
      }
      if (stats.retried > 0 || stats.failed > 0)
        log(
          `[queue] iteration ${iteration}: ${stats.retried} job(s) ran again on the workers (a lost worker or a failed attempt), ${stats.failed} given up (faults)`,
        );
      // Every segment's reported version is held to its job's floor and to the bound.
      const bounded = withinStaleness({
        records: [...final, ...superseded],
        finalCount: final.length,
        floor,
        trainedVersion: iteration - 1,
        maxStaleness: config.maxStaleness ?? 0,
      });
      stats.staleDropped = bounded.dropped.length;
      for (const d of bounded.dropped)
        log(`[queue] iteration ${iteration}: episode ${d.episodeId} left out: ${d.reason}`);
      if (bounded.dropped.length === final.length)
        throw new QueueError(
          `iteration ${iteration}: every episode was left out by the staleness bound; the first: ${bounded.dropped[0]!.reason}`,
        );
      return bounded.records;
    },
    metrics: async (input) => {
      const stats = statsOf.get(input.iteration) ?? { retried: 0, failed: 0, staleDropped: 0 };
      statsOf.delete(input.iteration);
      return {
        ...(await stages.metrics(input)),
        'rollout/retried': stats.retried,
        'rollout/failed': stats.failed,
        'rollout/stale_dropped': stats.staleDropped,
      };
    },
  });
  return { wrap, close: () => queue.close() };
}

/** Refusals are a disagreement between the trainer and its workers (or a stranger on the queue): the run stops, naming them. */
function refusedError(iteration: number, refused: readonly { episodeId: string; reason: string }[]): QueueError {
  const named = refused.slice(0, 8).map((f) => f.episodeId);
  const more = refused.length > named.length ? ` and ${refused.length - named.length} more` : '';
  return new QueueError(
    `iteration ${iteration}: ${refused.length} episode job(s) refused (${named.join(', ')}${more}): ${refusedWhy(refused[0]!.reason)}`,
  );
}
