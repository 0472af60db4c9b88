/**
 * Waits until `condition` holds, polling, or fails after `timeoutMs` naming what it waited for.
 * Tests wait for conditions with a deadline, never for a fixed time (a busy machine is slow).
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: { timeoutMs: number; what: string; intervalMs?: number },
): Promise<void> {
  const end = Date.now() + options.timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > end) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 25));
  }
}
