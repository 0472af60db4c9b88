import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { readTiming } from '../runs/timing-log.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { train } from './train-loop.ts';

const config = parseTrainConfig({
  env: { name: 'chunk-sum', stepDelayMs: 5 },
  model: { preset: 'tiny' },
  batchEpisodes: 3,
  iterations: 5,
  checkpointEvery: 5,
  maxStaleness: 2,
  ppo: { criticWarmupIterations: 0, offPolicy: 'decoupled' },
  sampleTrajectories: 0,
});

describe('sampling ahead of training with a staleness bound (docs/async.md)', () => {
  it('samples later batches while earlier ones train, and trains no segment more than S versions old', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-async-')), 'run');
    createRunDir({ dir, system: 'compaction-rl', config });
    const events: string[] = [];
    await train({
      runDir: dir,
      config,
      actor: 'policy',
      wrapStages: (stages) => ({
        ...stages,
        sample: (input) => {
          events.push(`sample ${input.iteration}`);
          return stages.sample(input);
        },
        update: async (input) => {
          const ppo = await stages.update(input);
          events.push(`update ${input.iteration}`);
          return ppo;
        },
      }),
    });
    const at = (e: string): number => {
      expect(events).toContain(e);
      return events.indexOf(e);
    };
    // S = 2: batches 1 and 2 start together with the first weights (two at once at most); batch
    // 4 waits for update 1, batch 5 for update 2.
    expect(at('sample 2')).toBeLessThan(at('update 1'));
    expect(at('update 1')).toBeLessThan(at('sample 4'));
    expect(at('update 2')).toBeLessThan(at('sample 5'));
    const lines = readMetrics(join(dir, 'metrics.jsonl'));
    expect(lines.map((l) => l.iteration)).toEqual([1, 2, 3, 4, 5]);
    for (const l of lines) {
      expect(l.metrics['rollout/staleness_max']).toBeLessThanOrEqual(2);
      expect(l.metrics['rollout/staleness_mean']).toBeGreaterThanOrEqual(0);
      expect(l.metrics['off_policy/iw_mean']).toBeGreaterThan(0);
    }
    const timing = readTiming(join(dir, 'timing.jsonl'));
    expect(timing.map((l) => l.iteration)).toEqual([1, 2, 3, 4, 5]);
    for (const l of timing) {
      expect(l.timing['perf/wait_s']).toBeGreaterThanOrEqual(0);
      expect(l.timing['perf/train_s']).toBeGreaterThan(0);
    }
    // Batch 2 was sampled with the first weights (version 0) and trains after update 1.
    expect(lines[1]!.metrics['rollout/staleness_max']).toBe(1);
  });

  it('takes a bound with rollout workers and a torch trainer, and refuses a negative one', () => {
    // Both sample ahead too (src/cli/async-queue-train.test.ts, src/cli/torch-train.test.ts).
    expect(
      parseTrainConfig({ maxStaleness: 1, queue: { url: 'redis://127.0.0.1:6379' }, engine: { url: 'http://x:1' } })
        .maxStaleness,
    ).toBe(1);
    expect(parseTrainConfig({ maxStaleness: 2, trainer: { kind: 'torch' } }).maxStaleness).toBe(2);
    expect(() => parseTrainConfig({ maxStaleness: -1 })).toThrow('maxStaleness');
    expect(() => parseTrainConfig({ ppo: { offPolicy: 'decoupled', tisLevel: 'sequence' } })).toThrow(
      "'sequence' applies to ppo.offPolicy 'tis' only",
    );
  });
});
