import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { expectBehaviourLogprobs } from './testing/behaviour-logprobs.ts';
import { readTiming } from '../experiments/runs/timing-log.ts';
import { crlAsync } from './testing/spawn-crl.ts';

/**
 * The staleness bound's contract (docs/async.md): `--max-staleness 0` is the synchronous loop bit
 * for bit (and the synchronous loop is reproducible byte for byte: metrics.jsonl holds no wall clock), and with `--max-staleness 1` no metrics line reports a segment more than one version
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

describe('crl train --max-staleness', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-async-train-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('0 and a second run of the same command give the same metrics.jsonl and final checkpoint bytes; 1 keeps every line within 1', async () => {
    // The entropy bonus moves the weights every update although no chunk-sum episode of a tiny
    // model from scratch succeeds (zero advantages), so equal checkpoints mean equal updates.
    const cfg = join(root, 'config.json');
    writeFileSync(cfg, JSON.stringify({ ppo: { criticWarmupIterations: 0, entropyCoef: 0.01 } }));
    const out = (name: string) => ['--out', join(root, name)];
    const [plain, again, zero, one] = await Promise.all([
      crlAsync([...BASE, cfg, ...out('plain')], { timeoutMs: 240_000 }),
      crlAsync([...BASE, cfg, ...out('again')], { timeoutMs: 240_000 }),
      crlAsync([...BASE, cfg, ...out('zero'), '--max-staleness', '0'], { timeoutMs: 240_000 }),
      crlAsync(
        [
          ...BASE,
          cfg,
          ...out('one'),
          '--max-staleness',
          '1',
          '--off-policy',
          'tis',
          '--step-delay-ms',
          '10',
          '--temperature',
          '0.7',
          '--top-p',
          '0.9',
        ],
        { timeoutMs: 240_000 },
      ),
    ]);
    for (const r of [plain, again, zero, one]) expect(r.code, r.stderr).toBe(0);

    const metrics = (name: string) => join(root, name, 'metrics.jsonl');
    const bytes = readFileSync(metrics('plain'));
    expect(readFileSync(metrics('again')).equals(bytes)).toBe(true);
    expect(readFileSync(metrics('zero')).equals(bytes)).toBe(true);
    // Nothing of the process or the place: no wall-clock group, no path, only numbers.
    const text = bytes.toString('utf8');
    expect(text).not.toContain('perf/');
    expect(text).not.toContain(root);
    for (const l of text.trim().split('\n'))
      for (const v of Object.values((JSON.parse(l) as { metrics: Record<string, unknown> }).metrics))
        expect(v === null || typeof v === 'number').toBe(true);
    // The wall clock went to timing.jsonl, one line per iteration.
    const timing = readTiming(join(root, 'plain', 'timing.jsonl'));
    expect(timing.map((l) => l.iteration)).toEqual([1, 2, 3]);
    for (const l of timing) expect(l.timing['perf/sample_s']).toBeGreaterThan(0);

    const ckpt = (name: string) => join(root, name, 'checkpoints', 'iter-000003');
    const files = readdirSync(ckpt('plain')).sort();
    for (const name of ['again', 'zero']) {
      expect(readdirSync(ckpt(name)).sort()).toEqual(files);
      for (const f of files)
        expect(readFileSync(join(ckpt(name), f)).equals(readFileSync(join(ckpt('plain'), f))), `${name}/${f}`).toBe(
          true,
        );
    }

    const lines = readMetrics(metrics('one'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3]);
    for (const l of lines) {
      expect(l.metrics['rollout/staleness_max']).toBeLessThanOrEqual(1);
      expect(l.metrics['off_policy/iw_capped']).toBeGreaterThanOrEqual(0);
    }
    expectBehaviourLogprobs(lines);
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
