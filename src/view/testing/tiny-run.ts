import { join } from 'node:path';
import { parseTrainConfig } from '../../config/load-config.ts';
import { evaluatePolicy } from '../../experiments/evaluate/evaluate-policy.ts';
import { createRunDir } from '../../experiments/runs/run-dir.ts';
import { train } from '../../experiments/train/train-loop.ts';

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
  /** The system config.json names (default compaction-rl) and the run's seed (default 0). */
  system?: string;
  seed?: number;
  /** The task family (default kv-ledger: it knows the facts a summary must keep). */
  env?: string;
  /** Also evaluate the trained policy (2 tasks x 4 samples, x1 and x4) into <run>/eval/. */
  evaluate?: boolean;
}): Promise<string> {
  const dir = join(options.parent, options.name ?? 'tiny-run');
  const config = parseTrainConfig({
    name: options.system ?? 'compaction-rl',
    seed: options.seed ?? 0,
    env: { name: options.env ?? 'kv-ledger' },
    model: { preset: 'tiny' },
    batchEpisodes: options.episodes ?? 4,
    sampleTrajectories: options.episodes ?? 4,
    iterations: options.iterations ?? 3,
    checkpointEvery: 1000,
    ppo: { criticWarmupIterations: 1 },
  });
  createRunDir({ dir, system: config.name, config });
  await train({ runDir: dir, config, actor: 'expert' });
  if (options.evaluate)
    await evaluatePolicy({
      system: config.name,
      policy: dir,
      env: 'kv-ledger',
      variant: 'default',
      summaryWriter: 'self',
      rollout: {},
      knobs: {},
      tasks: 2,
      samplesPerTask: 4,
      windows: [1, 4],
      trainingWindows: 4,
      seed: 0,
      out: join(dir, 'eval', 'kv-ledger-default-self.json'),
    });
  return dir;
}
