/**
 * One JSON POST to an engine, classified the way a client decides what to do next: `unreachable`
 * (refused, reset, timed out: another try, or another replica, may work), `http` (the engine
 * answered with an error status: 5xx may pass, 4xx will not), or `ok` with the parsed body.
 */
export type EnginePost =
  | { kind: 'ok'; json: unknown }
  | { kind: 'unreachable'; message: string }
  | { kind: 'http'; status: number; text: string };

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
    return { kind: 'unreachable', message: `${(e as Error).message}${cause ? `: ${cause.message}` : ''}` };
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    return { kind: 'unreachable', message: `the answer broke off (${(e as Error).message})` };
  }
  if (!res.ok) return { kind: 'http', status: res.status, text };
  try {
    return { kind: 'ok', json: JSON.parse(text) };
  } catch {
    return { kind: 'http', status: res.status, text: `the answer is not JSON: ${text.slice(0, 200)}` };
  }
}
