/**
 * Sampling ahead on rollout workers (docs/async.md, decision 0043), with real processes only: a
 * throwaway redis-server, two `crl worker` processes (one of them slow: every step waits 100 ms)
 * a `crl serve` engine the workers sample the policy on, and `crl train --queue --max-staleness 1`
 * as a `crl` process. Jobs carry the weights they may be sampled with, workers report the version
 * of each segment, and no metrics line may report a segment more than one version old; batch 2 is
 * queued while iteration 1 trains, so the bound is reached, not just kept. The workers' behaviour
 * log-probs (temperature 0.7, top-p 0.9) reach the update: the importance weights show it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { redisAvailable, startRedis, type RedisProcess } from '../queue/testing/redis-server.ts';
import { expectBehaviourLogprobs } from './testing/behaviour-logprobs.ts';
import { CRL_BIN, crlAsync } from './testing/spawn-crl.ts';

const available = redisAvailable('sampling ahead on rollout workers');
const TOKEN = 'async-queue-test-token';

describe.skipIf(!available)('crl train --queue --max-staleness 1 (real redis-server and crl worker processes)', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-async-queue-'));
  const workers: ChildProcess[] = [];
  let redis: RedisProcess | undefined;
  let engine: Served | undefined;
  afterAll(async () => {
    workers.forEach((w) => w.kill('SIGKILL'));
    engine?.child.kill('SIGKILL');
    await redis?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('trains every iteration on segments at most one version old, with a slow worker among the fast', async () => {
    redis = await startRedis();
    await tinyCheckpoint(join(root, 'init'), { seed: 2 });
    const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
    engine = await startServe(['--policy', join(root, 'init'), '--weights-dir', root], env);
    const cfg = join(root, 'config.json');
    // The entropy bonus moves the weights although every episode fails alike (zero advantages).
    writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, entropyCoef: 0.01 } }));
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
        '--init',
        join(root, 'init'),
        '--config',
        cfg,
        '--engine-url',
        engine.url,
        '--engine-logprobs',
        'sampled',
        '--off-policy',
        'tis',
        '--temperature',
        '0.7',
        '--top-p',
        '0.9',
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
      { env, timeoutMs: 150_000 },
    );
    expect(r.code, r.stderr + engine.stderr()).toBe(0);
    const lines = readMetrics(join(run, 'metrics.jsonl'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3]);
    for (const l of lines) {
      expect(l.metrics['rollout/staleness_max'], `iteration ${l.iteration}`).toBeLessThanOrEqual(1);
      expect(l.metrics['rollout/stale_dropped']).toBe(0);
      expect(l.metrics['rollout/episodes']).toBe(4);
    }
    // Batch 2 was queued with the first weights while iteration 1 trained.
    expect(lines[1]!.metrics['rollout/staleness_max']).toBe(1);
    expectBehaviourLogprobs(lines);
  }, 180_000);
});
