import type { TrainConfigInput } from '../../config/train-config.ts';
import { RolloutConfigSchema, WORD_TOKEN_UNITS } from '../../rollout/config.ts';
import { ASYNC_SYSTEMS, CREDIT_SYSTEMS, SYSTEM_NAMES, type SystemName } from '../../eval/system-names.ts';

// The systems of method §7 as config overrides on top of a preset's training config. 'base' is the
// SFT model itself (no RL). Names (eval/system-names.ts) are the keys of `crl reproduce`'s JSON.
export { ASYNC_SYSTEMS, CREDIT_SYSTEMS, SYSTEM_NAMES, type SystemName } from '../../eval/system-names.ts';

/** The RL systems: every system but 'base', in SYSTEM_NAMES order. */
export const RL_SYSTEMS = SYSTEM_NAMES.filter((s): s is Exclude<SystemName, 'base'> => s !== 'base');

/** The RL systems of method §7 (the paper's tables and the broadcast baseline). */
export const PAPER_RL_SYSTEMS = RL_SYSTEMS.filter(
  (s) => !([...CREDIT_SYSTEMS, ...ASYNC_SYSTEMS] as readonly string[]).includes(s),
) as Exclude<SystemName, 'base' | (typeof CREDIT_SYSTEMS)[number] | (typeof ASYNC_SYSTEMS)[number]>[];

/** The system trained with one window of twice the context (method §7, the paper's fixed-peak-budget comparison). */
export const DOUBLE_CONTEXT_SYSTEM = 'ppo-single-window-2x' satisfies SystemName;

/** C of a training config (the word vocabulary's default when the config does not set it). */
export function contextWindowOf(train: TrainConfigInput): number {
  return RolloutConfigSchema.parse({ ...train.rollout, maxWindows: 1 }).contextWindow ?? WORD_TOKEN_UNITS.contextWindow;
}

/** RL systems: what each changes relative to CompactionRL, given the preset's training config. */
const SYSTEM_OVERRIDES: Readonly<Record<Exclude<SystemName, 'base'>, (train: TrainConfigInput) => TrainConfigInput>> = {
  'ppo-single-window': () => ({ algorithm: 'ppo-single-window', rollout: { maxWindows: 1 } }),
  // K = 1 at 2C: the same T_comp, so the episode ends (truncated) when less than T_comp is left of 2C.
  'ppo-single-window-2x': (train) => ({
    algorithm: 'ppo-single-window',
    rollout: { maxWindows: 1, contextWindow: 2 * contextWindowOf(train) },
  }),
  'compaction-rl': () => ({}),
  'no-summary-training': () => ({ ablation: { trainSummaries: false } }),
  'segment-mean-loss': () => ({ ablation: { lossAggregation: 'segment-mean' } }),
  'no-cross-trajectory-gae': () => ({ ablation: { crossTrajectory: false } }),
  // Group baseline: 4 samples per task, same number of episodes per batch.
  broadcast: () => ({ algorithm: 'broadcast', groupSize: 4 }),
  'full-trajectory-gae': () => ({ advantage: { estimator: 'full-trajectory-gae' } }),
  'inverse-count-weights': () => ({ ppo: { segmentWeights: 'inverse-count' } }),
  'split-reward': () => ({ advantage: { segmentReward: 'split' } }),
  'discounted-reward': () => ({ advantage: { segmentReward: 'discounted' } }),
  'no-whitening': () => ({ ppo: { whitenAdvantages: 'none' } }),
  'per-kind-whitening': () => ({ ppo: { whitenAdvantages: 'per-kind' } }),
  'per-position-whitening': () => ({ ppo: { whitenAdvantages: 'per-position' } }),
  // docs/async.md: the staleness bound alone, then with AReaL's decoupled PPO (cap: --tis-cap's default).
  'staleness-1': () => ({ maxStaleness: 1 }),
  'staleness-2': () => ({ maxStaleness: 2 }),
  'staleness-1-decoupled': () => ({ maxStaleness: 1, ppo: { offPolicy: 'decoupled' } }),
  'staleness-2-decoupled': () => ({ maxStaleness: 2, ppo: { offPolicy: 'decoupled' } }),
};

export function systemOverrides(name: string, train: TrainConfigInput = {}): TrainConfigInput {
  const o = (SYSTEM_OVERRIDES as Record<string, (t: TrainConfigInput) => TrainConfigInput>)[name];
  if (!o)
    throw new Error(`unknown RL system ${JSON.stringify(name)}; valid: ${Object.keys(SYSTEM_OVERRIDES).join(', ')}`);
  return { ...o(train), name };
}
