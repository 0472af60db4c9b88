import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { listSampleFiles, readSampleFile } from '../../report/sample-files.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { train } from './train-loop.ts';

describe('per-token credit of the sampled episodes', () => {
  it('saves what the update used: A_hat, whitened advantages, returns, values, old log-probs, ratios', async () => {
    const config = parseTrainConfig({
      env: { name: 'chunk-sum' },
      model: { preset: 'tiny' },
      batchEpisodes: 4,
      iterations: 2,
      ppo: { criticWarmupIterations: 1 },
      sampleTrajectories: 4,
    });
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-credit-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config });
    // The expert acts (it succeeds, so rewards and advantages vary); the policy and critic still train.
    await train({ runDir: dir, config, actor: 'expert' });

    const files = listSampleFiles(dir);
    expect(files.map((f) => f.iteration)).toEqual([1, 2]);
    const metrics = readMetrics(join(dir, 'metrics.jsonl'));
    expect(metrics.map((m) => m.metrics['train/policy_updated'])).toEqual([0, 1]); // critic warm-up, then PPO
    for (const file of files) {
      const episodes = readSampleFile(file.path);
      expect(episodes.map((e) => e.record.episodeId)).toEqual([0, 1, 2, 3].map((i) => `it${file.iteration}-ep${i}`));
      const updated = metrics[file.iteration - 1]!.metrics['train/policy_updated'] === 1;
      const usedAll: number[] = [];
      for (const { record, credit } of episodes) {
        expect(credit.policyUpdated).toBe(updated);
        const last = credit.segments.length - 1;
        credit.segments.forEach((c, s) => {
          const seg = record.segments[s]!;
          // gamma = 1, lambda_critic = 1, no bootstrap across a boundary: every local return is R (method §4).
          for (const g of c.return) expect(g).toBeCloseTo(record.reward, 4);
          // The last generated token of the last segment: A_hat = A_loc = R - V (N_after = 0).
          const n = c.advantage.length;
          if (s === last && n > 0) expect(c.advantage[n - 1]!).toBeCloseTo(record.reward - c.value![n - 1]!, 4);
          expect(c.oldLogprob).toHaveLength(seg.lossMask.filter((m) => m === 1).length);
          for (const lp of c.oldLogprob) expect(lp).toBeLessThanOrEqual(0);
          for (const h of c.entropy) expect(h).toBeGreaterThanOrEqual(0);
          for (const r of c.ratio) expect(r).toBeGreaterThan(0);
          if (c.used) usedAll.push(...c.used);
          else expect(updated).toBe(false);
        });
      }
      if (updated) {
        // Every episode of the batch was saved, so the used advantages are the whole whitened batch.
        const mean = usedAll.reduce((a, x) => a + x, 0) / usedAll.length;
        const sd = Math.sqrt(usedAll.reduce((a, x) => a + (x - mean) ** 2, 0) / (usedAll.length - 1));
        expect(Math.abs(mean)).toBeLessThan(1e-4);
        expect(sd).toBeCloseTo(1, 3);
        const ratios = episodes.flatMap((e) => e.credit.segments.flatMap((c) => c.ratio));
        expect(ratios.some((r) => Math.abs(r - 1) > 1e-4)).toBe(true); // the update moved the policy
      }
    }
  });
});
