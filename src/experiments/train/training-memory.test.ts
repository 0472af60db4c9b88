import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainConfig } from '../../config/load-config.ts';
import { loadCheckpoint } from '../../model/formats/checkpoint.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';
import { readMetrics } from '../runs/metrics-log.ts';
import { createRunDir } from '../runs/run-dir.ts';
import { train } from './train-loop.ts';

/** The training memory knobs through the loop: the plan's refusal, and recomputation (model.recompute). */
const config = parseTrainConfig({
  env: { name: 'chunk-sum' },
  model: { preset: 'tiny' },
  batchEpisodes: 3,
  iterations: 2,
  ppo: { criticWarmupIterations: 1 },
  sampleTrajectories: 0,
});

const replayable = (dir: string) =>
  readMetrics(join(dir, 'metrics.jsonl')).map((l) =>
    Object.fromEntries(Object.entries(l.metrics).filter(([k]) => !k.startsWith('perf/'))),
  );

async function run(c: typeof config): Promise<string> {
  const dir = join(mkdtempSync(join(tmpdir(), 'crl-training-memory-')), 'run');
  createRunDir({ dir, system: 'compaction-rl', config: c });
  await train({ runDir: dir, config: c, actor: 'expert' });
  return dir;
}

describe('training memory', () => {
  it('--recompute trains to the same metrics and weights, bit for bit', async () => {
    const a = await run(config);
    const b = await run(parseTrainConfig({ ...config, model: { ...config.model, recompute: true } }));
    expect(replayable(a)[1]!['train/policy_updated']).toBe(1);
    expect(replayable(b)).toEqual(replayable(a));
    const [wa, wb] = await Promise.all([a, b].map((d) => loadCheckpoint(latestCheckpoint(d)!.dir)));
    expect(Buffer.from(wb!.policy.net.params.buffer).equals(Buffer.from(wa!.policy.net.params.buffer))).toBe(true);
    expect(Buffer.from(wb!.critic!.net.params.buffer).equals(Buffer.from(wa!.critic!.net.params.buffer))).toBe(true);
  });

  it('refuses a run whose memory plan exceeds the machine, naming the flags', async () => {
    // 10^8-token minibatches of the tiny model: about 0.7 TB of activations by the plan.
    const c = parseTrainConfig({ ...config, ppo: { ...config.ppo, minibatchTokens: 100_000_000 } });
    await expect(run(c)).rejects.toThrow(
      /training needs about \d+\.\d GB .*; lower --minibatch-tokens \(now 100000000\) or --critic-layers, or add --recompute/,
    );
  });
});
