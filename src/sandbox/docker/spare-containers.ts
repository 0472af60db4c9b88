import type { AttachedContainer } from './attached-container.ts';
import { engine } from './engine-api.ts';

/**
 * Containers started before they are asked for (docs/sandbox.md, "Cost"): per container
 * configuration (image, limits, directories, environment: the `key`), a few containers already
 * started, waiting for their seeds (container-prelude.ts), so that an episode's start takes one
 * instead of waiting for the engine. Each is handed out once and never comes back: an episode always gets a container that
 * nothing ran in. As many are kept as sandboxes of the key were open at once (at most `max`), so
 * a run of one episode at a time keeps one, four at a time four. A spare no one takes within
 * IDLE_MS is removed; while waiting it does not keep the process alive, and when the process
 * ends its connection closes and the container ends and is removed with it (as a sandbox's does).
 */

export interface Spare {
  name: string;
  /** Started; its prelude waits for the seeds (container-prelude.ts). */
  container: AttachedContainer;
  /** The supervisor's session nonce, on its command line. */
  nonce: string;
}

const IDLE_MS = 30_000;

interface Pool {
  ready: Spare[];
  /** Spares being started, by name: settled once each is ready or removed. */
  starting: Map<string, Promise<void>>;
  open: number;
  peak: number;
  idle: NodeJS.Timeout | null;
  /** removeSpares ran: a spare that finishes starting now is removed at once. */
  retired: boolean;
}

const pools = new Map<string, Pool>();

/**
 * A sandbox for `key`: a spare when one is ready, else `make(name)` now; either way, spares are
 * started in the background up to the key's peak of open sandboxes (at most `max`). `closed`
 * must be called when the sandbox closes (it counts the open ones).
 */
export async function takeContainer(options: {
  key: string;
  max: number;
  newName: () => string;
  make: (name: string) => Promise<Spare>;
}): Promise<{ spare: Spare; closed: () => void }> {
  const pool = poolOf(options.key);
  pool.open++;
  pool.peak = Math.max(pool.peak, pool.open);
  let done = false;
  const closed = (): void => {
    if (done) return;
    done = true;
    pool.open--;
  };
  const ready = pool.ready.shift();
  refill(pool, options);
  if (ready) {
    ready.container.hold(true);
    return { spare: ready, closed };
  }
  try {
    return { spare: await options.make(options.newName()), closed };
  } catch (e) {
    closed();
    throw e;
  }
}

function poolOf(key: string): Pool {
  let pool = pools.get(key);
  if (!pool) {
    pool = { ready: [], starting: new Map(), open: 0, peak: 0, idle: null, retired: false };
    pools.set(key, pool);
  }
  return pool;
}

function refill(
  pool: Pool,
  options: { max: number; newName: () => string; make: (name: string) => Promise<Spare> },
): void {
  if (pool.idle) clearTimeout(pool.idle);
  pool.idle = setTimeout(() => void drain(pool), IDLE_MS);
  pool.idle.unref();
  const want = Math.min(options.max, pool.peak);
  while (pool.ready.length + pool.starting.size < want) {
    const name = options.newName();
    const started = options
      .make(name)
      .then(async (spare) => {
        if (pool.retired) return removeSpare(spare);
        spare.container.hold(false);
        // A spare whose container ended while it waited (removed from outside) is not handed out.
        spare.container.on('exit', () => {
          const at = pool.ready.indexOf(spare);
          if (at >= 0) pool.ready.splice(at, 1);
        });
        pool.ready.push(spare);
      })
      // A spare that fails to start is not one: the next sandbox starts as it would without spares, and says why.
      .catch(() => undefined)
      .finally(() => pool.starting.delete(name));
    pool.starting.set(name, started);
  }
}

async function drain(pool: Pool): Promise<void> {
  const spares = pool.ready.splice(0);
  await Promise.all(spares.map((s) => removeSpare(s)));
}

async function removeSpare(s: Spare): Promise<void> {
  s.container.kill();
  await engine({ method: 'DELETE', path: `/containers/${s.name}`, query: { force: 1 }, timeoutMs: 60_000 }).catch(
    () => undefined,
  );
}

/** Names of the containers waiting as spares, or being started as spares (tests leave them out of what a sandbox left). */
export function spareNames(): Set<string> {
  const names = new Set<string>();
  for (const p of pools.values()) {
    for (const s of p.ready) names.add(s.name);
    for (const n of p.starting.keys()) names.add(n);
  }
  return names;
}

/** How many spares are ready to be taken, over every key. */
export function readySpares(): number {
  let n = 0;
  for (const p of pools.values()) n += p.ready.length;
  return n;
}

/** Removes every spare now (and forgets the peaks): nothing of this process waits in the daemon. */
export async function removeSpares(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  for (const p of all) {
    p.retired = true;
    if (p.idle) clearTimeout(p.idle);
  }
  await Promise.all(all.flatMap((p) => [drain(p), ...p.starting.values()]));
}
