import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { expectBehaviourLogprobs } from './testing/behaviour-logprobs.ts';
import { crlAsync } from './testing/spawn-crl.ts';

/**
 * Sampling ahead against a remote engine (docs/async.md): `crl train --engine-url` with
 * `--max-staleness 1` pushes new weights to a real `crl serve` process while the next batch's
 * episodes are asking it for tokens. Requests caught by a push take the new weights (the pool asks
 * for the latest published version on every attempt) instead of waiting for the old ones until
 * they time out, and every trained segment stays within the bound.
 */
const TOKEN = 'async-engine-test-token';

describe('crl train --engine-url --max-staleness 1 (a real crl serve process)', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-async-engine-'));
  const servers: Served[] = [];
  afterAll(() => {
    servers.forEach((s) => s.child.kill('SIGKILL'));
    rmSync(root, { recursive: true, force: true });
  });

  it('trains every iteration within the bound while weights are pushed under running episodes', async () => {
    await tinyCheckpoint(join(root, 'engine-init'), { seed: 1 });
    await tinyCheckpoint(join(root, 'trainer-init'), { seed: 2 });
    const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
    const engine = await startServe(['--policy', join(root, 'engine-init'), '--weights-dir', root], env);
    servers.push(engine);
    const cfg = join(root, 'config.json');
    // The entropy bonus moves the weights although every episode fails alike (zero advantages), so
    // a stale batch's importance weights differ from 1.
    writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, entropyCoef: 0.01 } }));
    const run = join(root, 'run');
    const r = await crlAsync(
      [
        'train',
        '--env',
        'chunk-sum',
        '--init',
        join(root, 'trainer-init'),
        '--config',
        cfg,
        '--batch',
        '3',
        '--iterations',
        '4',
        '--checkpoint-every',
        '4',
        '--step-delay-ms',
        '50',
        '--max-staleness',
        '1',
        '--off-policy',
        'tis',
        '--engine-url',
        engine.url,
        // crl serve reports the log-probs of the distribution it drew from, top-p included.
        '--engine-logprobs',
        'sampled',
        '--temperature',
        '0.7',
        '--top-p',
        '0.9',
        '--out',
        run,
      ],
      { env, timeoutMs: 240_000 },
    );
    expect(r.code, r.stderr + engine.stderr()).toBe(0);
    const lines = readMetrics(join(run, 'metrics.jsonl'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3, 4]);
    for (const l of lines) expect(l.metrics['rollout/staleness_max']).toBeLessThanOrEqual(1);
    expectBehaviourLogprobs(lines);
  }, 300_000);
});
