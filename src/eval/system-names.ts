/**
 * The systems of method §7 by name, in the paper's row order, and docs/credit.md's systems. Kept in
 * eval/ because both the report (which labels and groups them) and experiments/ (which turns each
 * into config overrides, systems.ts) need the same list, and neither may import the other.
 */
export const SYSTEM_NAMES = [
  'base',
  'ppo-single-window',
  'ppo-single-window-2x',
  'compaction-rl',
  'no-summary-training',
  'segment-mean-loss',
  'no-cross-trajectory-gae',
  'broadcast',
  // Credit across compaction boundaries (docs/credit.md): CompactionRL with one choice changed.
  'full-trajectory-gae',
  'inverse-count-weights',
  'split-reward',
  'discounted-reward',
  'no-whitening',
  'per-kind-whitening',
  'per-position-whitening',
  // Asynchronous rollouts (docs/async.md): CompactionRL sampled up to S versions behind, with and
  // without the decoupled-PPO correction.
  'staleness-1',
  'staleness-2',
  'staleness-1-decoupled',
  'staleness-2-decoupled',
] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

/** The systems of docs/credit.md: each changes one choice of CompactionRL's credit assignment. */
export const CREDIT_SYSTEMS = [
  'full-trajectory-gae',
  'inverse-count-weights',
  'split-reward',
  'discounted-reward',
  'no-whitening',
  'per-kind-whitening',
  'per-position-whitening',
] as const satisfies readonly SystemName[];

/** The systems of docs/async.md: CompactionRL at a staleness bound S, with or without a correction. */
export const ASYNC_SYSTEMS = [
  'staleness-1',
  'staleness-2',
  'staleness-1-decoupled',
  'staleness-2-decoupled',
] as const satisfies readonly SystemName[];
