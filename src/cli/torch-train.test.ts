import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tinyCheckpoint } from '../adapters/testing/crl-serve.ts';
import { torchAvailable } from '../adapters/testing/torch-available.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { readTiming } from '../experiments/runs/timing-log.ts';
import { crlAsync } from './testing/spawn-crl.ts';
import { agree, PARITY_KEYS } from './testing/torch-parity.ts';

/**
 * `crl train --trainer torch` (one process, and two under torchrun) against `crl train` (the
 * embedded engine): the same --init, seed and flags give the same iteration-1 losses and gradient
 * norms; a trainer that dies is one clear
 * line; --resume continues from the last checkpoint to the numbers an uninterrupted run reaches.
 */
const KEYS = PARITY_KEYS;

const run = torchAvailable('crl train --trainer torch') ? describe : describe.skip;

run('crl train --trainer torch', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-torch-train-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const TIMEOUT = 600_000;

  it(
    'matches the embedded engine on iteration 1, and a dead trainer is one line that --resume gets past',
    async () => {
      const init = join(root, 'init');
      await tinyCheckpoint(init, { seed: 7 });
      const cfg = join(root, 'config.json');
      // No critic warm-up and two epochs: every logged number comes from a real update.
      writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, epochs: 2 } }));
      const flags = (out: string) => [
        'train',
        '--config',
        cfg,
        '--init',
        init,
        '--actor',
        'expert',
        '--env',
        'chunk-sum',
        '--batch',
        '2',
        '--iterations',
        '2',
        '--checkpoint-every',
        '1',
        '--seed',
        '3',
        '--out',
        join(root, out),
      ];
      // Iteration 1 takes 2 policy and 4 critic steps: the 7th step request falls in iteration 2.
      const dying = '/usr/bin/python3 -m crl_torch --fail-at-step 7';
      const [embedded, torch, ranks, dies] = await Promise.all([
        crlAsync(flags('embedded'), { timeoutMs: TIMEOUT }),
        crlAsync([...flags('torch'), '--trainer', 'torch'], { timeoutMs: TIMEOUT }),
        crlAsync([...flags('ranks'), '--trainer', 'torch', '--trainer-procs', '2'], { timeoutMs: TIMEOUT }),
        crlAsync([...flags('resumed'), '--trainer', 'torch', '--trainer-command', dying], { timeoutMs: TIMEOUT }),
      ]);
      expect(embedded.stderr).not.toMatch(/\n\s+at /);
      expect(embedded.code, embedded.stderr).toBe(0);
      expect(torch.code, torch.stderr).toBe(0);
      expect(ranks.code, ranks.stderr).toBe(0);
      const a = readMetrics(join(root, 'embedded', 'metrics.jsonl'));
      const b = readMetrics(join(root, 'torch', 'metrics.jsonl'));
      const r = readMetrics(join(root, 'ranks', 'metrics.jsonl'));
      expect(b.map((m) => m.iteration)).toEqual([1, 2]);
      expect(r.map((m) => m.iteration)).toEqual([1, 2]);
      for (const k of KEYS) {
        const x = a[0]!.metrics[k]!;
        expect(typeof x === 'number' && x !== 0, k).toBe(true);
        for (const [name, y] of [
          ['torch', b[0]!.metrics[k]!],
          ['torch, 2 processes', r[0]!.metrics[k]!],
        ] as const)
          expect(agree(x, y), `${k}: embedded ${x}, ${name} ${y}`).toBe(true);
      }
      // The update's time, split: the trainer's handlers and the wire (the rest of each round trip).
      const timing = readTiming(join(root, 'torch', 'timing.jsonl'));
      for (const k of ['perf/sample_s', 'perf/update_s', 'perf/trainer_compute_s', 'perf/trainer_wire_s'])
        expect(timing[0]!.timing[k], k).toBeGreaterThan(0);

      expect(dies.code, dies.stderr).toBe(2); // a user error (cli/errors.ts)
      expect(dies.stderr.trim().split('\n').pop()).toMatch(
        /^crl: error: the torch trainer \(\/usr\/bin\/python3 -m crl_torch --fail-at-step 7\) exited with code 3 during step: crl_torch: rank 0 exiting at step request 7/,
      );
      expect(readMetrics(join(root, 'resumed', 'metrics.jsonl')).map((m) => m.iteration)).toEqual([1]);
      const resumed = await crlAsync(
        [
          'train',
          '--resume',
          join(root, 'resumed'),
          '--actor',
          'expert',
          '--trainer-command',
          '/usr/bin/python3 -m crl_torch',
        ],
        { timeoutMs: TIMEOUT },
      );
      expect(resumed.code, resumed.stderr).toBe(0);
      const c = readMetrics(join(root, 'resumed', 'metrics.jsonl'));
      expect(c.map((m) => m.iteration)).toEqual([1, 2]);
      // The resumed iteration 2 starts from checkpoint 1's weights and AdamW moments, exactly as
      // the uninterrupted run's did, so it logs the same numbers to the bit.
      for (const k of KEYS) expect(c[1]!.metrics[k], k).toBe(b[1]!.metrics[k]);
    },
    TIMEOUT,
  );

  it(
    'samples ahead with --max-staleness 1: the embedded sampler acts with the weights pulled after each update, within the bound',
    async () => {
      const cfg = join(root, 'ahead-config.json');
      writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, entropyCoef: 0.01 } }));
      const run = join(root, 'ahead');
      const r = await crlAsync(
        [
          'train',
          '--from-scratch',
          '--env',
          'chunk-sum',
          '--model',
          'tiny',
          '--config',
          cfg,
          '--batch',
          '3',
          '--iterations',
          '3',
          '--checkpoint-every',
          '3',
          '--step-delay-ms',
          '10',
          '--trainer',
          'torch',
          '--max-staleness',
          '1',
          '--off-policy',
          'tis',
          '--out',
          run,
        ],
        { timeoutMs: TIMEOUT },
      );
      expect(r.code, r.stderr).toBe(0);
      const lines = readMetrics(join(run, 'metrics.jsonl'));
      expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3]);
      for (const l of lines) expect(l.metrics['rollout/staleness_max']).toBeLessThanOrEqual(1);
      // Batch 2 was sampled with the first weights while iteration 1 trained on the torch process.
      expect(lines[1]!.metrics['rollout/staleness_max']).toBe(1);
    },
    TIMEOUT,
  );
});
