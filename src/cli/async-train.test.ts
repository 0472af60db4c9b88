import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics } from '../experiments/metrics-log.ts';
import { crlAsync } from './testing/spawn-crl.ts';

/**
 * The staleness bound's contract (docs/async.md): `--max-staleness 0` is the synchronous loop bit
 * for bit, and with `--max-staleness 1` no metrics line reports a segment more than one version
 * old. The policy acts (real sampler log-probs), and the critic warm-up is off so every
 * iteration moves the weights the next batches are sampled with.
 */
const BASE = [
  'train',
  '--from-scratch',
  '--env',
  'chunk-sum',
  '--model',
  'tiny',
  '--batch',
  '3',
  '--iterations',
  '3',
  '--checkpoint-every',
  '3',
  '--seed',
  '5',
  '--config',
];

/** A metrics file with its wall-clock numbers (perf/*, different in every run) blanked out. */
function withoutClock(path: string): string {
  return readFileSync(path, 'utf8').replace(/"perf\/[^"]+":[^,}]+/g, '"perf/…":0');
}

describe('crl train --max-staleness', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-async-train-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('0 gives the same metrics.jsonl and final checkpoint bytes as no flag; 1 keeps every line within 1', async () => {
    const cfg = join(root, 'config.json');
    writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0 } }));
    const out = (name: string) => ['--out', join(root, name)];
    const [plain, zero, one] = await Promise.all([
      crlAsync([...BASE, cfg, ...out('plain')], { timeoutMs: 240_000 }),
      crlAsync([...BASE, cfg, ...out('zero'), '--max-staleness', '0'], { timeoutMs: 240_000 }),
      crlAsync([...BASE, cfg, ...out('one'), '--max-staleness', '1', '--off-policy', 'tis', '--step-delay-ms', '10'], {
        timeoutMs: 240_000,
      }),
    ]);
    for (const r of [plain, zero, one]) expect(r.code, r.stderr).toBe(0);

    const metrics = (name: string) => join(root, name, 'metrics.jsonl');
    expect(withoutClock(metrics('zero'))).toBe(withoutClock(metrics('plain')));
    const ckpt = (name: string) => join(root, name, 'checkpoints', 'iter-000003');
    const files = readdirSync(ckpt('plain')).sort();
    expect(readdirSync(ckpt('zero')).sort()).toEqual(files);
    for (const f of files)
      expect(readFileSync(join(ckpt('zero'), f)).equals(readFileSync(join(ckpt('plain'), f))), f).toBe(true);

    const lines = readMetrics(metrics('one'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3]);
    for (const l of lines) {
      expect(l.metrics['rollout/staleness_max']).toBeLessThanOrEqual(1);
      expect(l.metrics['off_policy/iw_capped']).toBeGreaterThanOrEqual(0);
    }
    for (const l of readMetrics(metrics('plain'))) expect(l.metrics['rollout/staleness_max']).toBe(0);
  }, 300_000);

  it('refuses a negative bound and an unknown correction with the flag named', async () => {
    const [neg, bad] = await Promise.all([
      crlAsync(['train', '--from-scratch', '--env', 'chunk-sum', '--max-staleness', '-1', '--out', join(root, 'x')]),
      crlAsync(['train', '--from-scratch', '--env', 'chunk-sum', '--off-policy', 'magic', '--out', join(root, 'y')]),
    ]);
    expect(neg.code).not.toBe(0);
    expect(neg.stderr).toContain('--max-staleness');
    expect(neg.stderr).not.toContain('    at ');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--off-policy');
    expect(bad.stderr).not.toContain('    at ');
  }, 120_000);
});
