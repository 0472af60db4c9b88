import type { ConnectionOptions } from 'bullmq';

/** The queue cannot do its job (Redis unreachable or lost, no worker, a batch past its deadline): a user-facing error. */
export class QueueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QueueError';
  }
}

/**
 * BullMQ's connection options for a redis:// (or rediss://) URL. `maxRetriesPerRequest: null` is
 * what BullMQ requires for its blocking commands: a command waits through a reconnect instead of
 * failing, so a restarted Redis is picked up again; the callers bound that wait with their own
 * deadlines (withDeadline) and say what was lost.
 */
export function redisConnection(url: string): ConnectionOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new QueueError(`queue URL ${JSON.stringify(url)} is not a URL; expected e.g. redis://127.0.0.1:6379`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new QueueError(`queue URL ${JSON.stringify(url)}: expected redis:// or rediss://`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new QueueError(`queue URL ${url}: the database must be a number, e.g. /0`);
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    db,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    maxRetriesPerRequest: null,
    // Reconnect quickly while Redis restarts (at most every 1 s).
    retryStrategy: (times: number) => Math.min(100 * times, 1_000),
  };
}

/** The URL without its password, for messages and logs. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href.replace(/\/$/, '');
  } catch {
    return url;
  }
}

/** `promise`, or a QueueError saying `what` once `ms` pass (a Redis command waiting through a reconnect would wait forever). */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new QueueError(what())), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

interface Closable {
  close(): Promise<void>;
  disconnect(): Promise<void>;
}

/**
 * Closes BullMQ objects, and drops their connections when closing takes longer than `ms` (a
 * close waits for a Redis that may be gone; its reconnect attempts would keep the process alive).
 */
export async function shutDown(items: readonly Closable[], ms = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = Promise.allSettled(items.map((i) => i.close())).then(() => true);
  const late = new Promise<false>((res) => (timer = setTimeout(() => res(false), ms)));
  const inTime = await Promise.race([closed, late]);
  clearTimeout(timer);
  if (!inTime) await Promise.allSettled(items.map((i) => i.disconnect()));
}
