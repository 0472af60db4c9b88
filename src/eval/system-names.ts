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
