/**
 * Test helper: wait for a condition with a deadline instead of sleeping a fixed time and then
 * asserting. A fixed sleep is either too short on a loaded machine (the test races) or too long on an
 * idle one; polling ends as soon as the condition holds and fails with a message naming what never
 * happened.
 */
export interface WaitForOptions {
  /** What is awaited, for the error message ("the sandbox's marker file"). */
  what: string;
  /** Give up after this long (default 20 s: generous, since a passing test returns early). */
  timeoutMs?: number;
  /** Time between checks (default 20 ms). */
  intervalMs?: number;
}

/**
 * Resolves with the condition's first truthy value; rejects once `timeoutMs` has passed without one.
 * The condition may be async; a condition that throws is treated as not yet true, and its last error
 * is reported if the deadline passes.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { what, timeoutMs = 20_000, intervalMs = 20 }: WaitForOptions,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
