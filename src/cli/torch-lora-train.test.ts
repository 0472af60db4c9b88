import { readdirSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tinyCheckpoint } from '../adapters/testing/crl-serve.ts';
import { torchAvailable } from '../adapters/testing/torch-available.ts';
import { latestCheckpoint } from '../experiments/runs/checkpoint-store.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { openSafetensors, readTensorInto } from '../model/formats/safetensors.ts';
import { crl, crlAsync } from './testing/spawn-crl.ts';
import { agree, PARITY_KEYS } from './testing/torch-parity.ts';

/**
 * `crl train --trainer torch --lora-rank 4` against `crl train --lora-rank 4` (the embedded
 * adapter): the same --init, seed and flags give the same iteration-1 losses and gradient norms
 * (optim/grad_norm is the adapters' norm on both); the torch run's checkpoints hold the embedded
 * run's files, `crl export` reads them, and --resume after a dead trainer continues to the numbers
 * an uninterrupted run reaches, bit for bit.
 */
const KEYS = PARITY_KEYS;

const run = torchAvailable('crl train --trainer torch --lora-rank') ? describe : describe.skip;

run('crl train --trainer torch --lora-rank', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-torch-lora-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const TIMEOUT = 600_000;

  it(
    'matches the embedded LoRA run on iteration 1, writes the same checkpoint files, and resumes exactly',
    async () => {
      const init = join(root, 'init');
      await tinyCheckpoint(init, { seed: 7 });
      const cfg = join(root, 'config.json');
      // No critic warm-up and two epochs: every logged number comes from a real update.
      writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, epochs: 2 } }));
      const flags = (out: string) => [
        'train',
        ...['--config', cfg, '--init', init, '--actor', 'expert', '--env', 'chunk-sum', '--batch', '2'],
        ...['--iterations', '2', '--checkpoint-every', '1', '--seed', '3', '--lora-rank', '4'],
        ...['--out', join(root, out)],
      ];
      // Iteration 1 takes 2 policy and 4 critic steps: the 7th step request falls in iteration 2.
      const dying = '/usr/bin/python3 -m crl_torch --fail-at-step 7';
      const [embedded, torch, dies] = await Promise.all([
        crlAsync(flags('embedded'), { timeoutMs: TIMEOUT }),
        crlAsync([...flags('torch'), '--trainer', 'torch'], { timeoutMs: TIMEOUT }),
        crlAsync([...flags('resumed'), '--trainer', 'torch', '--trainer-command', dying], { timeoutMs: TIMEOUT }),
      ]);
      expect(embedded.code, embedded.stderr).toBe(0);
      expect(torch.stderr).not.toMatch(/\n\s+at /);
      expect(torch.code, torch.stderr).toBe(0);
      const a = readMetrics(join(root, 'embedded', 'metrics.jsonl'));
      const b = readMetrics(join(root, 'torch', 'metrics.jsonl'));
      expect(b.map((m) => m.iteration)).toEqual([1, 2]);
      const measured: Record<string, string> = {};
      for (const k of KEYS) {
        const x = a[0]!.metrics[k]!;
        const y = b[0]!.metrics[k]!;
        expect(typeof x === 'number' && x !== 0, k).toBe(true);
        measured[k] =
          `embedded ${x}, torch ${y}, absolute ${Math.abs(x - y).toExponential(2)}, relative ${(Math.abs(x - y) / Math.abs(x)).toExponential(2)}`;
        expect(agree(x, y), `${k}: embedded ${x}, torch ${y}`).toBe(true);
      }
      process.stderr.write(`torch LoRA run against the embedded one, iteration 1: ${JSON.stringify(measured)}\n`);

      // The same files as the embedded LoRA run's checkpoint, adapters under PEFT's names.
      const ea = latestCheckpoint(join(root, 'embedded'))!.dir;
      const tb = latestCheckpoint(join(root, 'torch'))!.dir;
      expect(readdirSync(tb).sort()).toEqual(readdirSync(ea).sort());
      expect(readdirSync(tb)).toEqual(
        expect.arrayContaining(['adapter_config.json', 'adapter_model.safetensors', 'crl_adapter.json']),
      );
      expect(JSON.parse(readFileSync(join(tb, 'trainer_state.json'), 'utf8')).policyAdapter).toBe('lora');
      const keys = (dir: string) => [...openSafetensors(join(dir, 'adapter_model.safetensors'), dir).tensors.keys()];
      expect(keys(tb).sort()).toEqual(keys(ea).sort());

      // crl export reads the torch run's checkpoint: its merged weights, unchanged.
      const out = join(root, 'hf');
      const ex = crl(['export', '--policy', join(root, 'torch'), '--format', 'hf', '--out', out]);
      expect(ex.code, ex.stderr).toBe(0);
      const exported = openSafetensors(join(out, 'model.safetensors'), 'export');
      const saved = openSafetensors(join(tb, 'model.safetensors'), 'checkpoint');
      for (const [name, t] of saved.tensors) {
        const n = t.shape.reduce((p, q) => p * q, 1);
        const x = new Float32Array(n);
        const y = new Float32Array(n);
        readTensorInto({ file: saved, name, shape: t.shape, dst: x, what: name });
        readTensorInto({ file: exported, name, shape: t.shape, dst: y, what: name });
        expect(y, name).toEqual(x);
      }

      expect(dies.code, dies.stderr).toBe(2);
      expect(dies.stderr).toMatch(/exited with code 3 during step/);
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
      // Iteration 2 starts from checkpoint 1's base, adapters and their AdamW moments, as the
      // uninterrupted run's did, so it logs the same numbers to the bit.
      for (const k of KEYS) expect(c[1]!.metrics[k], k).toBe(b[1]!.metrics[k]);
    },
    TIMEOUT,
  );
});
