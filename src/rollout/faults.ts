import { z } from 'zod';
import { FAULT_KINDS, type FaultKind } from '../contracts/index.ts';
import type { EnvErrorEvent, EpisodeRecord } from './record.ts';

/**
 * Faults are not rewards (docs/faults.md). An episode ends as the agent's (success, failure,
 * truncated, step-limit) or as a fault (outcome 'env-error': a sandbox, verifier, engine or
 * environment failure outside the agent's reach). Training runs a faulted episode again on a
 * fresh environment a bounded number of times and otherwise leaves it out of the update (no
 * advantage, loss or critic target; group and batch statistics without it); evaluation counts it
 * as a failure and reports it apart, by kind.
 */

/** How training treats faults (the config's `faults` block). */
export const FaultPolicySchema = z
  .object({
    /** Times a faulted episode runs again, each on a fresh environment, before it is left out. */
    retries: z.number().int().nonnegative().default(1),
    /**
     * The run stops when more than this share of an iteration's episodes are still faulted after
     * their retries: an update on what is left would train on a sliver of the batch.
     */
    maxFraction: z.number().min(0).max(1).default(0.5),
  })
  .strict();
export type FaultPolicy = z.infer<typeof FaultPolicySchema>;

export function isFault(record: Pick<EpisodeRecord, 'outcome'>): boolean {
  return record.outcome === 'env-error';
}

/** The event that ended a faulted episode (its first reset or step env-error), or null. */
export function faultEvent(record: EpisodeRecord): EnvErrorEvent | null {
  if (!isFault(record)) return null;
  for (const e of record.events) if (e.kind === 'env-error' && e.during !== 'close') return e;
  return null;
}

/** Whose fault a faulted episode was ('environment' for records older than the kinds). */
export function faultKind(record: EpisodeRecord): FaultKind {
  return faultEvent(record)?.fault ?? 'environment';
}

/** One line naming a faulted episode and why: `it3-ep2: sandbox fault during step: ...`. */
export function describeFault(record: EpisodeRecord): string {
  const e = faultEvent(record);
  if (!e) return `${record.episodeId}: environment fault (no reason recorded)`;
  return `${record.episodeId}: ${e.fault ?? 'environment'} fault during ${e.during}: ${e.message}`;
}

/** Faulted episodes by kind, every kind present (zero when none). */
export function countFaults(records: readonly EpisodeRecord[]): Record<FaultKind, number> {
  const out = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  for (const r of records) if (isFault(r)) out[faultKind(r)]++;
  return out;
}

/**
 * The faulted record of an episode whose rollout-queue job was given up (every attempt failed on
 * the workers, or a worker holding it was lost too often): no episode came back, so it has no
 * segments, and its one env-error event (`during: 'job'`) names the kind and the last attempt's
 * reason. It is left out and counted like any fault (docs/faults.md).
 */
export function givenUpRecord(options: {
  episodeId: string;
  env: string;
  seed: number;
  tokenizer: string;
  fault: FaultKind;
  message: string;
  contextWindow: number;
  maxWindows: number;
}): EpisodeRecord {
  const { fault, message, ...rest } = options;
  return {
    ...rest,
    reward: 0,
    outcome: 'env-error',
    compactions: 0,
    steps: 0,
    generatedTokens: 0,
    segments: [],
    events: [{ kind: 'env-error', during: 'job', step: 0, cause: 'error', fault, message }],
  };
}

/** The id of a faulted episode's `attempt`-th run again (`it3-ep2-retry1`). */
export function retryEpisodeId(episodeId: string, attempt: number): string {
  return `${baseEpisodeId(episodeId).base}-retry${attempt}`;
}

function baseEpisodeId(episodeId: string): { base: string; attempt: number } {
  const m = /^(.*)-retry(\d+)$/.exec(episodeId);
  return m ? { base: m[1]!, attempt: Number(m[2]) } : { base: episodeId, attempt: 0 };
}

/**
 * An iteration's records as its sample stage returns them: the batch's records in batch order,
 * then the faulted attempts that were run again (each superseded by its retry, named by
 * retryEpisodeId). A faulted record whose next retry is among the records was superseded; the
 * others are final. Only the agent's final episodes train; the rest are counted. (A rollout queue
 * returns a job it gave up on as a faulted record: givenUpRecord.)
 */
export function splitFaults(options: { records: readonly EpisodeRecord[]; batchEpisodes: number }): {
  /** Episodes that ended as the agent's: the update's batch. */
  trained: EpisodeRecord[];
  /** Final records that are faults: left out of the update. */
  leftOut: EpisodeRecord[];
  /** Faulted attempts that were run again on a fresh environment. */
  retried: EpisodeRecord[];
} {
  const ids = new Set(options.records.map((r) => r.episodeId));
  const superseded = (r: EpisodeRecord) => {
    if (!isFault(r)) return false;
    const { base, attempt } = baseEpisodeId(r.episodeId);
    return ids.has(`${base}-retry${attempt + 1}`);
  };
  const final = options.records.filter((r) => !superseded(r));
  return {
    trained: final.filter((r) => !isFault(r)),
    leftOut: final.filter(isFault),
    retried: options.records.filter(superseded),
  };
}

/**
 * metrics.jsonl's fault counts for one iteration (keys `rollout/fault...`): faulted attempts by
 * kind (retried or left out), attempts run again, episodes left out and their share of the batch.
 */
export function faultMetrics(options: { records: readonly EpisodeRecord[]; batchEpisodes: number }) {
  const { leftOut, retried } = splitFaults(options);
  const byKind = countFaults([...leftOut, ...retried]);
  const out: Record<string, number> = {
    'rollout/fault_left_out': leftOut.length,
    'rollout/fault_retried': retried.length,
    'rollout/fault_rate': leftOut.length / Math.max(1, options.batchEpisodes),
  };
  for (const k of FAULT_KINDS) out[`rollout/fault_${k}`] = byKind[k];
  return out;
}

/** The run stops: too many of an iteration's episodes faulted to train on the rest. */
export class FaultBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FaultBudgetError';
  }
}

/** Whether the faults left out of a batch stop the run: more than maxFraction of it, or all of it. */
export function overFaultBudget(o: {
  leftOut: number;
  trained: number;
  batchEpisodes: number;
  maxFraction: number;
}): boolean {
  return o.leftOut > 0 && (o.leftOut / Math.max(1, o.batchEpisodes) > o.maxFraction || o.trained === 0);
}

/** Throws FaultBudgetError (one line, naming the first fault) when the faults left out exceed the policy's share, or leave nothing. */
export function checkFaultBudget(options: {
  records: readonly EpisodeRecord[];
  batchEpisodes: number;
  iteration: number;
  maxFraction: number;
  /** What the batch is, at the start of the line (default `iteration <n>`). */
  label?: string;
}): void {
  const { trained, leftOut } = splitFaults(options);
  if (!overFaultBudget({ leftOut: leftOut.length, trained: trained.length, ...options })) return;
  throw new FaultBudgetError(
    `${options.label ?? `iteration ${options.iteration}`}: ${leftOut.length} of ${options.batchEpisodes} episodes ended in faults after their retries ` +
      `(more than faults.maxFraction ${options.maxFraction}); the first: ${describeFault(leftOut[0]!)}`,
  );
}

/**
 * Runs the jobs, then each one that ended in a fault again, up to `retries` times, under its
 * retry id (retryEpisodeId); `run` must build fresh environments. Returns splitFaults' input: the
 * final records in job order, then the superseded attempts.
 */
export async function runWithRetries<J extends { episodeId: string }>(options: {
  jobs: readonly J[];
  retries: number;
  run: (jobs: readonly J[]) => Promise<EpisodeRecord[]>;
}): Promise<EpisodeRecord[]> {
  const { jobs } = options;
  const final = await options.run(jobs);
  const superseded: EpisodeRecord[] = [];
  for (let attempt = 1; attempt <= options.retries; attempt++) {
    const again = final.flatMap((r, i) => (isFault(r) ? [i] : []));
    if (again.length === 0) break;
    const records = await options.run(
      again.map((i) => ({ ...jobs[i]!, episodeId: retryEpisodeId(jobs[i]!.episodeId, attempt) })),
    );
    again.forEach((i, k) => {
      superseded.push(final[i]!);
      final[i] = records[k]!;
    });
  }
  return [...final, ...superseded];
}
