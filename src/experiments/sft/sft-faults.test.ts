import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Environment } from '../../contracts/index.ts';
import type { TaskFamily } from '../../env/family.ts';
import { getFamily } from '../../env/registry.ts';
import { FaultBudgetError } from '../../rollout/faults.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { SftConfigSchema } from './sft-config.ts';
import { runSft } from './sft.ts';

/**
 * Faults in expert data (docs/faults.md): a demonstration whose sandbox failed is not a
 * demonstration. The SFT runs them again, leaves out what still fails, counts both, and stops
 * when an epoch lost more than faults.maxFraction of its episodes.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-sft-faults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const config = SftConfigSchema.parse({
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny' },
  episodes: 8,
  epochs: 1,
  batchTokens: 512,
  heldOutEpisodes: 0,
  lossyP: 0, // the expert's own summaries: every demonstration succeeds
});

/** chunk-sum whose resets throw a sandbox fault when `fails(seed, attempt)` says so (attempt 1 = the seed's first reset). */
function faultyFamily(fails: (seed: number, attempt: number) => boolean): TaskFamily {
  const family = getFamily('chunk-sum');
  const attempts = new Map<number, number>();
  const wrap = (env: Environment): Environment => ({
    name: env.name,
    reset: (seed, o) => {
      const attempt = (attempts.get(seed) ?? 0) + 1;
      attempts.set(seed, attempt);
      if (fails(seed, attempt)) throw Object.assign(new Error('the sandbox did not start'), { faultKind: 'sandbox' });
      return env.reset(seed, o);
    },
    step: (action, o) => env.step(action, o),
  });
  return { ...family, create: (knobs) => wrap(family.create(knobs)) };
}

describe('SFT expert data with faults', () => {
  it('runs faulted demonstrations again, leaves out those that still fail, and counts both', async () => {
    let persistent: number | undefined; // the first seed drawn never starts
    const family = faultyFamily((seed, attempt) => {
      persistent ??= seed;
      return seed === persistent || (seed % 2 === 0 && attempt === 1);
    });
    const lines: string[] = [];
    const runDir = join(root, 'some');
    await runSft({ runDir, config, family, log: (l) => lines.push(l) });
    const m = readMetrics(join(runDir, 'metrics.jsonl'))[0]!.metrics;
    const leftOut = m['sft/fault_left_out']!;
    expect(leftOut).toBeGreaterThanOrEqual(1); // the persistent seed's episodes
    expect(m['sft/expert_episodes']! + leftOut).toBe(8);
    expect(m['sft/fault_retried']!).toBeGreaterThanOrEqual(leftOut); // each left-out episode was tried again first
    expect(m['sft/loss']).toBeGreaterThan(0);
    expect(m['sft/expert_success']).toBe(1); // lossless summaries, no slips
    const data = JSON.parse(readFileSync(join(runDir, 'sft-data.json'), 'utf8'));
    expect(data.faultsLeftOut).toBe(leftOut);
    expect(data.episodesSeen).toBe(8 - leftOut);
    expect(
      lines.some((l) => /^SFT epoch 1: \d+ expert episodes ended in faults and ran again, \d+ of 8 left out/.test(l)),
    ).toBe(true);
  }, 120_000);

  it('stops with one line, leaving nothing behind, when more than faults.maxFraction of an epoch is lost', async () => {
    const runDir = join(root, 'all');
    const family = faultyFamily(() => true);
    const run = runSft({ runDir, config, family });
    await expect(run).rejects.toThrow(FaultBudgetError);
    await expect(run).rejects.toThrow(
      /^SFT epoch 1: 8 of 8 expert episodes ended in faults after their retries \(more than faults.maxFraction 0.5\); the first: sft-e1-\d+-retry1: sandbox fault during reset: the environment's reset failed: the sandbox did not start$/,
    );
    expect(existsSync(runDir)).toBe(false);
    // No retries and a budget of everything: an epoch that lost some episodes trains on the rest.
    const tolerant = SftConfigSchema.parse({ ...config, faults: { retries: 0, maxFraction: 1 } });
    const dir = join(root, 'tolerant');
    await runSft({ runDir: dir, config: tolerant, family: faultyFamily((seed) => seed % 2 === 0) });
    const m = readMetrics(join(dir, 'metrics.jsonl'))[0]!.metrics;
    expect(m['sft/fault_retried']).toBe(0);
    expect(m['sft/expert_episodes']! + m['sft/fault_left_out']!).toBe(8);
  }, 120_000);
});
