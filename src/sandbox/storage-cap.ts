import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxSession } from './backend.ts';
import { AgentFaultError } from './sandbox-types.ts';

/**
 * A total disk cap for a sandbox (`storageMb`, docs/sandbox.md "Bounds") where the file system
 * cannot enforce one (overlay2 needs xfs with project quotas for `--storage-opt size`; bwrap's
 * directories are plain host directories): what the sandbox has written is measured every
 * CHECK_EVERY_MS and after each command, and once it is over the cap the sandbox is frozen and the
 * episode ends as the agent's failure (AgentFaultError): no later command runs, nor the verifier.
 * Between two checks a sandbox can write what its disk takes in that time, each file at most
 * `fileSizeMb`.
 */
export const CHECK_EVERY_MS = 2000;

export function withStorageCap(options: {
  session: SandboxSession;
  capMb: number;
  /** Bytes written so far, or null when it cannot be told (the check is skipped). */
  measure: () => Promise<number | null>;
  /** Stops everything inside from writing more (docker pause; bwrap: nothing more runs). */
  freeze: () => Promise<void>;
}): SandboxSession {
  const { session, capMb } = options;
  const capBytes = capMb * 1024 * 1024;
  let over: string | null = null;
  let stopped = false;
  const inFlight = new Set<AbortController>();
  const check = async (): Promise<void> => {
    if (over !== null || stopped) return;
    const bytes = await options.measure();
    if (bytes === null || bytes <= capBytes || over !== null) return;
    over = `the sandbox wrote ${Math.round(bytes / 1048576)} MB to disk, over its storage_mb of ${capMb}`;
    await options.freeze().catch(() => undefined);
    for (const c of inFlight) c.abort();
  };
  let timer: NodeJS.Timeout | null = null;
  const loop = (): void => {
    timer = setTimeout(() => void check().finally(() => (stopped ? undefined : loop())), CHECK_EVERY_MS);
    timer.unref();
  };
  loop();
  const refuse = (): void => {
    if (over !== null) throw new AgentFaultError(over);
  };
  /** A command that the freeze cuts short (aborted), and whose end is checked against the cap. */
  const guarded = async <T>(
    signal: AbortSignal | undefined,
    f: (signal: AbortSignal) => Promise<T>,
    after: () => Promise<void>,
  ): Promise<T> => {
    refuse();
    const abort = new AbortController();
    const forward = (): void => abort.abort();
    signal?.addEventListener('abort', forward, { once: true });
    inFlight.add(abort);
    try {
      const r = await f(abort.signal);
      await after();
      refuse();
      return r;
    } catch (e) {
      refuse();
      throw e;
    } finally {
      inFlight.delete(abort);
      signal?.removeEventListener('abort', forward);
    }
  };
  return {
    ...session,
    run: (command, o = {}) => guarded(o.signal, (signal) => session.run(command, { ...o, signal }), check),
    // The verifier's run counts too: the code it tests may write; a freeze meanwhile is the sandbox's doing.
    runFresh: (command, o) =>
      guarded(
        o.signal,
        (signal) => session.runFresh(command, { ...o, signal }),
        async () => undefined,
      ),
    async clearAgent() {
      await check();
      refuse();
      await session.clearAgent();
    },
    async close() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await session.close();
    },
  };
}

/** Bytes in regular files under a host directory (links not followed). */
export function treeBytes(dir: string): number {
  let total = 0;
  const walk = (d: string): void => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      try {
        const st = lstatSync(p);
        if (st.isDirectory()) walk(p);
        else if (st.isFile()) total += st.size;
      } catch {
        // removed meanwhile
      }
    }
  };
  walk(dir);
  return total;
}
