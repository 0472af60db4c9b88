/**
 * A job the rollout queue gives up on is a faulted episode held to the fault budget
 * (docs/faults.md, "On a rollout queue"), end to end with real processes: a throwaway
 * redis-server, `crl train --queue` and `crl worker`s that are SIGKILLed while they hold the
 * whole batch, three times over, so BullMQ gives every job up as stalled too often. The run must
 * stop before its update with the fault budget's one line, not train on what is left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../queue/testing/redis-server.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { CRL_BIN, crlAsync } from './testing/spawn-crl.ts';

const available = redisAvailable('the fault budget on a rollout queue');

describe.skipIf(!available)('jobs a rollout queue gives up on count against the fault budget', () => {
  const workers: ChildProcess[] = [];
  let redis: RedisProcess | null = null;
  afterEach(async () => {
    workers.splice(0).forEach((w) => w.kill('SIGKILL'));
    await redis?.stop();
  });

  /** A `crl worker`: how many episodes it has started so far, and SIGKILL. */
  function worker(url: string): { started: () => number; kill: () => void } {
    const child = spawn(process.execPath, [CRL_BIN, 'worker', '--queue', url, '--concurrency', '4'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    workers.push(child);
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    return { started: () => (err.match(/ started/g) ?? []).length, kill: () => child.kill('SIGKILL') };
  }

  it('workers lost while they hold every job, until BullMQ gives the jobs up: exit 2 with the fault budget line', async () => {
    redis = await startRedis();
    const out = join(mkdtempSync(join(tmpdir(), 'crl-queue-budget-')), 'run');
    let done = false;
    // Steps wait 5 s, so no episode ends before its worker is killed.
    const trainer = crlAsync(
      [
        'train',
        '--env',
        'chunk-sum',
        '--model',
        'tiny',
        '--from-scratch',
        '--actor',
        'expert',
        '--batch',
        '4',
        '--iterations',
        '1',
        '--step-delay-ms',
        '5000',
        '--queue',
        redis.url,
        '--queue-timeout',
        '120',
        '--out',
        out,
      ],
      { timeoutMs: 280_000 },
    ).finally(() => (done = true));
    // A job may stall twice (queue-worker.ts maxStalled) and still run; the third stall fails it.
    for (let kill = 1; kill <= 3; kill++) {
      const w = worker(redis.url);
      await waitFor(() => w.started() === 4 || done, {
        what: `worker ${kill} to hold the whole batch`,
        timeoutMs: 120_000,
      });
      w.kill();
    }
    worker(redis.url); // its stalled check gives the jobs up
    const r = await trainer;

    expect(r.code, r.stderr).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      /^crl: error: iteration 1: 4 of 4 episodes ended in faults after their retries \(more than faults\.maxFraction 0\.5\); the first: it1-ep\d: environment fault during job: the queue gave its job up: job stalled more than allowable limit$/,
    );
    expect(lines).toContain(
      '[queue] iteration 1: 4 job(s) ran again on the workers (a lost worker or a failed attempt), 4 given up (faults)',
    );
    // Stopped before the update: no iteration logged, every job's reason on file.
    expect(readMetrics(join(out, 'metrics.jsonl'))).toEqual([]);
    expect(existsSync(join(out, 'failed-episodes.jsonl'))).toBe(true);
    expect(readFileSync(join(out, 'failed-episodes.jsonl'), 'utf8').trim().split('\n')).toHaveLength(4);
  }, 300_000);
});
