import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.ts';

/**
 * The secret a trainer and its workers share (docs/distributed.md, "Who chooses what a worker
 * runs"). Jobs are signed with it, so only a holder of the secret chooses what a worker runs, and
 * workers sign their results with it, so only a holder chooses what the trainer trains on.
 */
export const QUEUE_SECRET_ENV = 'CRL_QUEUE_SECRET';

/** The secret from the environment; an empty value (`CRL_QUEUE_SECRET=$UNSET_VAR`) counts as unset. */
export function queueSecretFromEnv(env: NodeJS.ProcessEnv = process.env): string | null {
  const s = env[QUEUE_SECRET_ENV];
  return s ? s : null;
}

/**
 * HMAC-SHA256 over the canonical JSON of the whole payload (src/util/canonical-json.ts), after a
 * label saying what is signed, so a job's signature never passes for a result's.
 */
const JOB_LABEL = 'crl-episode-job-v1';
const RESULT_LABEL = 'crl-episode-result-v1';

function hmac(secret: string, label: string, payload: unknown): string {
  return createHmac('sha256', secret)
    .update(`${label}\n${canonicalJson(payload)}`)
    .digest('hex');
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The signature of a job's message: every field of it (run, session, the episode with its
 * environment and seed, tokenizer, rollout settings, the sampler with its engine URLs, the step
 * delay). The run and session are part of the job id, which the worker checks against the
 * message, so a signed message cannot be re-queued under another run, session or episode.
 */
export function signJob(message: object, secret: string): string {
  return hmac(secret, JOB_LABEL, message);
}

/** Why a job's data (as read from Redis, signature field included) does not verify; null when it does. */
export function jobSignatureProblem(data: unknown, secret: string | null): string | null {
  const signature = isObject(data) ? data.signature : undefined;
  if (secret === null)
    return signature === undefined
      ? null
      : `the job is signed, but this worker has no ${QUEUE_SECRET_ENV}; start it with the trainer's secret`;
  if (signature === undefined)
    return `the job is not signed; this worker takes only jobs signed with its ${QUEUE_SECRET_ENV} (set the same secret on the trainer)`;
  if (typeof signature !== 'string' || !isObject(data)) return 'the job carries a signature that is not a string';
  const { signature: _, ...message } = data;
  if (!same(signature, signJob(message, secret)))
    return `the job's signature does not match this worker's ${QUEUE_SECRET_ENV}: another secret signed it, or the job was changed after signing`;
  return null;
}

/** A worker's signature of its result, bound to the job it answers. */
export function signResult(result: { jobId: string; record: unknown; runMs: number }, secret: string): string {
  return hmac(secret, RESULT_LABEL, result);
}

/** Why a worker's result does not verify with the trainer's secret; null when it does (or the trainer has none). */
export function resultSignatureProblem(options: {
  jobId: string;
  record: unknown;
  runMs: number;
  signature?: string | undefined;
  secret: string | null;
}): string | null {
  const { secret, signature, ...result } = options;
  if (secret === null) return null;
  if (signature === undefined)
    return `the worker's result is not signed; start every worker with the trainer's ${QUEUE_SECRET_ENV}`;
  if (!same(signature, signResult(result, secret)))
    return `the worker's result is not signed with the trainer's ${QUEUE_SECRET_ENV}`;
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
