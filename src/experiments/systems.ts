import type { TrainConfigInput } from '../config/train-config.ts';

/**
 * The systems of method §7 as config overrides on top of a preset's training config. 'base' is the
 * SFT model itself (no RL). Names are the keys of `crl reproduce`'s JSON.
 */
export const SYSTEM_NAMES = [
  'base',
  'ppo-single-window',
  'compaction-rl',
  'no-summary-training',
  'segment-mean-loss',
  'no-cross-trajectory-gae',
  'broadcast',
] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

/** RL systems: what each changes relative to CompactionRL. */
const SYSTEM_OVERRIDES: Readonly<Record<Exclude<SystemName, 'base'>, TrainConfigInput>> = {
  'ppo-single-window': { algorithm: 'ppo-single-window', rollout: { maxWindows: 1 } },
  'compaction-rl': {},
  'no-summary-training': { ablation: { trainSummaries: false } },
  'segment-mean-loss': { ablation: { lossAggregation: 'segment-mean' } },
  'no-cross-trajectory-gae': { ablation: { crossTrajectory: false } },
  // Group baseline: 4 samples per task, same number of episodes per batch.
  broadcast: { algorithm: 'broadcast', groupSize: 4 },
};

export function isSystemName(name: string): name is SystemName {
  return (SYSTEM_NAMES as readonly string[]).includes(name);
}

export function systemOverrides(name: string): TrainConfigInput {
  const o = (SYSTEM_OVERRIDES as Record<string, TrainConfigInput>)[name];
  if (!o)
    throw new Error(`unknown RL system ${JSON.stringify(name)}; valid: ${Object.keys(SYSTEM_OVERRIDES).join(', ')}`);
  return { ...o, name };
}
