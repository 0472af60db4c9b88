import type { AttachedContainer } from './attached-container.ts';
import { engine } from './engine-api.ts';

/**
 * Containers started before they are asked for (docs/sandbox.md, "Cost"). A caller that knows a
 * sandbox will be needed soon says so (SandboxBackend.prepare: the episode runner does, for the
 * episodes after the running ones), and a container of that configuration (image, limits,
 * directories, environment: the `key`) is started then; the start that follows takes it, or
 * waits for it if it is still starting, instead of starting one of its own. A spare is started,
 * waits for its seeds (container-prelude.ts), and is handed out once: an episode always gets a
 * container nothing ran in. At most `max` wait at once; one no one takes within IDLE_MS is
 * removed. While waiting a spare does not keep the process alive, and when the process ends its
 * connection closes and the container ends and is removed with it, as a sandbox's does.
 */

export interface Spare {
  name: string;
  /** Started; its prelude waits for the seeds (container-prelude.ts). */
  container: AttachedContainer;
  /** The supervisor's session nonce, on its command line. */
  nonce: string;
}

const IDLE_MS = 30_000;

interface Starting {
  name: string;
  /** The spare, or null when it did not start or was removed. */
  spare: Promise<Spare | null>;
  /** A start took it while it was still starting. */
  claimed: boolean;
}

interface Pool {
  ready: Spare[];
  starting: Starting[];
  idle: NodeJS.Timeout | null;
  /** removeSpares ran: a spare that finishes starting now is removed at once. */
  retired: boolean;
}

const pools = new Map<string, Pool>();

/** Starts a spare for `key` unless `max` already wait (ready, or starting and not yet taken). */
export function reserveContainer(options: {
  key: string;
  max: number;
  newName: () => string;
  make: (name: string) => Promise<Spare>;
}): void {
  if (waiting() >= options.max) return;
  const pool = poolOf(options.key);
  if (pool.idle) clearTimeout(pool.idle);
  pool.idle = setTimeout(() => void drain(pool), IDLE_MS);
  pool.idle.unref();
  const starting: Starting = { name: options.newName(), claimed: false, spare: Promise.resolve(null) };
  starting.spare = options.make(starting.name).then(
    async (spare) => {
      pool.starting.splice(pool.starting.indexOf(starting), 1);
      if (starting.claimed) return spare;
      if (pool.retired) {
        await removeSpare(spare);
        return null;
      }
      spare.container.hold(false);
      // A spare whose container ended while it waited (removed from outside) is not handed out.
      spare.container.on('exit', () => {
        const at = pool.ready.indexOf(spare);
        if (at >= 0) pool.ready.splice(at, 1);
      });
      pool.ready.push(spare);
      return spare;
    },
    // A spare that fails to start is not one: the start that wanted it starts its own, and says why.
    () => {
      pool.starting.splice(pool.starting.indexOf(starting), 1);
      return null;
    },
  );
  pool.starting.push(starting);
}

/** A container for `key`: a spare when one is ready or starting, else `make(newName())` now. */
export async function takeContainer(options: {
  key: string;
  newName: () => string;
  make: (name: string) => Promise<Spare>;
}): Promise<Spare> {
  const pool = pools.get(options.key);
  const ready = pool?.ready.shift();
  if (ready) {
    ready.container.hold(true);
    return ready;
  }
  const starting = pool?.starting.find((s) => !s.claimed);
  if (starting) {
    starting.claimed = true;
    const spare = await starting.spare;
    if (spare) return spare;
  }
  return options.make(options.newName());
}

/** Spares waiting over every key: ready ones and those starting that no start took yet. */
function waiting(): number {
  let n = 0;
  for (const p of pools.values()) n += p.ready.length + p.starting.filter((s) => !s.claimed).length;
  return n;
}

function poolOf(key: string): Pool {
  let pool = pools.get(key);
  if (!pool) {
    pool = { ready: [], starting: [], idle: null, retired: false };
    pools.set(key, pool);
  }
  return pool;
}

async function drain(pool: Pool): Promise<void> {
  await Promise.all(pool.ready.splice(0).map((s) => removeSpare(s)));
}

async function removeSpare(s: Spare): Promise<void> {
  s.container.kill();
  await engine({ method: 'DELETE', path: `/containers/${s.name}`, query: { force: 1 }, timeoutMs: 60_000 }).catch(
    () => undefined,
  );
}

/** Names of the containers waiting as spares (tests leave them out of what a sandbox left). */
export function spareNames(): Set<string> {
  const names = new Set<string>();
  for (const p of pools.values()) {
    for (const s of p.ready) names.add(s.name);
    for (const s of p.starting) if (!s.claimed) names.add(s.name);
  }
  return names;
}

/** How many spares are ready to be taken, over every key. */
export function readySpares(): number {
  let n = 0;
  for (const p of pools.values()) n += p.ready.length;
  return n;
}

/** Removes every spare now: nothing of this process waits in the daemon. */
export async function removeSpares(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  for (const p of all) {
    p.retired = true;
    if (p.idle) clearTimeout(p.idle);
  }
  await Promise.all(all.flatMap((p) => [drain(p), ...p.starting.filter((s) => !s.claimed).map((s) => s.spare)]));
}
