import type { EnginePost } from './engine-http.ts';

/**
 * What an engine pool does with one replica's answer (docs/faults.md, "a busy engine is not a
 * dead one"). A server whose slots are all taken answers 503 (or 429) with Retry-After, as
 * `crl serve` does (src/serve/request-slots.ts): that replica is alive, so the request waits as
 * told and goes again, and the replica stays in. Only a refused or broken connection, or no
 * answer within the request's limit, takes a replica out at once; other 5xx answers take it out
 * only when they repeat (REPEATED_FAILURES in a row), since one may be a passing hiccup.
 */
export type ReplicaVerdict =
  | { kind: 'ok'; json: unknown }
  /** Alive but full: wait `waitMs`, then ask again; the replica stays in. */
  | { kind: 'busy'; waitMs: number }
  /** Gone (refused, reset, no answer within the limit): take it out, another replica takes the request. */
  | { kind: 'down'; why: string }
  /** A 5xx that is not "busy": ask again; REPEATED_FAILURES in a row take the replica out. */
  | { kind: 'failed'; why: string }
  /** A 4xx: the request itself is wrong, no replica will take it. */
  | { kind: 'refused'; status: number; why: string };

/** Non-busy 5xx answers in a row that take a replica out. */
export const REPEATED_FAILURES = 3;
/** Longest single wait a Retry-After may ask for; a longer one is cut (the request's deadline still holds). */
export const MAX_BUSY_WAIT_MS = 10_000;
/** Wait before asking again after a non-busy 5xx. */
export const FAILURE_BACKOFF_MS = 200;

export function judgeAnswer(answer: EnginePost): ReplicaVerdict {
  if (answer.kind === 'ok') return { kind: 'ok', json: answer.json };
  if (answer.kind === 'unreachable') return { kind: 'down', why: answer.message };
  const why = `HTTP ${answer.status}: ${answer.text.slice(0, 200)}`;
  if ((answer.status === 503 || answer.status === 429) && answer.retryAfterMs !== undefined)
    return { kind: 'busy', waitMs: Math.min(MAX_BUSY_WAIT_MS, Math.max(10, answer.retryAfterMs)) };
  if (answer.status >= 500) return { kind: 'failed', why };
  return { kind: 'refused', status: answer.status, why };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((res) => setTimeout(res, Math.max(0, ms)));
}

/** A fetch that gave up at its limit (getWeightVersion keeps the fetch error as its cause). */
export function isTimeout(e: unknown): boolean {
  return (e as { cause?: { name?: string } }).cause?.name === 'TimeoutError';
}
