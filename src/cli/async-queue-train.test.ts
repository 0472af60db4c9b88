/**
 * Sampling ahead on rollout workers (docs/async.md, decision 0043), with real processes only: a
 * throwaway redis-server, two `crl worker` processes (one of them slow: every step waits 100 ms)
 * and `crl train --queue --max-staleness 1` as a `crl` process. Jobs carry the weights they may be
 * sampled with, workers report the version of each segment, and no metrics line may report a
 * segment more than one version old; batch 2 is queued while iteration 1 trains, so the bound is
 * reached, not just kept.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics } from '../experiments/metrics-log.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../queue/testing/redis-server.ts';
import { CRL_BIN, crlAsync } from './testing/spawn-crl.ts';

const available = redisAvailable('sampling ahead on rollout workers');

describe.skipIf(!available)('crl train --queue --max-staleness 1 (real redis-server and crl worker processes)', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-async-queue-'));
  const workers: ChildProcess[] = [];
  let redis: RedisProcess | undefined;
  afterAll(async () => {
    workers.forEach((w) => w.kill('SIGKILL'));
    await redis?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('trains every iteration on segments at most one version old, with a slow worker among the fast', async () => {
    redis = await startRedis();
    for (const extra of [[], ['--step-delay-ms', '100']])
      workers.push(
        spawn(process.execPath, [CRL_BIN, 'worker', '--queue', redis.url, '--concurrency', '2', ...extra], {
          stdio: 'ignore',
        }),
      );
    const run = join(root, 'run');
    const r = await crlAsync(
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
        '3',
        '--checkpoint-every',
        '3',
        '--step-delay-ms',
        '20',
        '--max-staleness',
        '1',
        '--queue',
        redis.url,
        '--queue-timeout',
        '60',
        '--out',
        run,
      ],
      { timeoutMs: 150_000 },
    );
    expect(r.code, r.stderr).toBe(0);
    const lines = readMetrics(join(run, 'metrics.jsonl'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3]);
    for (const l of lines) {
      expect(l.metrics['rollout/staleness_max'], `iteration ${l.iteration}`).toBeLessThanOrEqual(1);
      expect(l.metrics['rollout/stale_dropped']).toBe(0);
      expect(l.metrics['rollout/episodes']).toBe(4);
    }
    // Batch 2 was queued with the first weights while iteration 1 trained.
    expect(lines[1]!.metrics['rollout/staleness_max']).toBe(1);
  }, 180_000);
});
