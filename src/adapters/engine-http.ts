/**
 * One JSON POST to an engine, classified the way a client decides what to do next: `unreachable`
 * (refused, reset, timed out: another try, or another replica, may work), `http` (the engine
 * answered with an error status: 5xx may pass, 4xx will not), or `ok` with the parsed body.
 */
export type EnginePost =
  | { kind: 'ok'; json: unknown }
  /** `timedOut`: no answer within the request's limit (the engine may be up but slow). */
  | { kind: 'unreachable'; message: string; timedOut: boolean }
  /** `retryAfterMs`: the engine's Retry-After header, when it sent one (a busy server says when to come back). */
  | { kind: 'http'; status: number; text: string; retryAfterMs?: number };

export async function postOnce(endpoint: URL, body: unknown, timeoutMs: number): Promise<EnginePost> {
  let res: Response;
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const cause = (e as { cause?: Error }).cause;
    return {
      kind: 'unreachable',
      message: `${(e as Error).message}${cause ? `: ${cause.message}` : ''}`,
      timedOut: (e as Error).name === 'TimeoutError',
    };
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    return {
      kind: 'unreachable',
      message: `the answer broke off (${(e as Error).message})`,
      timedOut: (e as Error).name === 'TimeoutError',
    };
  }
  if (!res.ok) {
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    return { kind: 'http', status: res.status, text, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  try {
    return { kind: 'ok', json: JSON.parse(text) };
  } catch {
    return { kind: 'http', status: res.status, text: `the answer is not JSON: ${text.slice(0, 200)}` };
  }
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
