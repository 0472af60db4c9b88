import { join } from 'node:path';
import { parseTrainConfig } from '../../config/load-config.ts';
import { createRunDir } from '../../experiments/run-dir.ts';
import { train } from '../../experiments/train-loop.ts';

/**
 * A small real training run for the viewer's tests and screenshots: kv-ledger (its family knows
 * the facts a summary must keep), the tiny model, a few iterations. The scripted expert acts, so
 * episodes read like real ones and compact; the policy and critic train on them as usual, so the
 * saved credit is what PPO used.
 */
export async function makeTinyRun(options: {
  parent: string;
  iterations?: number;
  episodes?: number;
  name?: string;
}): Promise<string> {
  const dir = join(options.parent, options.name ?? 'tiny-run');
  const config = parseTrainConfig({
    name: 'compaction-rl',
    env: { name: 'kv-ledger' },
    model: { preset: 'tiny' },
    batchEpisodes: options.episodes ?? 4,
    sampleTrajectories: options.episodes ?? 4,
    iterations: options.iterations ?? 3,
    checkpointEvery: 1000,
    ppo: { criticWarmupIterations: 1 },
  });
  createRunDir({ dir, system: config.name, config });
  await train({ runDir: dir, config, actor: 'expert' });
  return dir;
}
