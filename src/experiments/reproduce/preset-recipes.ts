import type { TrainConfigInput } from '../../config/train-config.ts';
import { PRESET_RECALL_STAGE } from '../sft/dense-warmup.ts';
import type { Preset } from './preset-types.ts';
import type { SftConfigInput } from '../sft/sft-config.ts';
import { CREDIT_SYSTEMS } from './systems.ts';

/**
 * The recipes the `crl reproduce` presets (presets.ts) are made of: SFT, RL, task knobs and the
 * paired evaluation, shared by several presets so that a preset built on another's recipe
 * (table4-mixed on quick, credit on full) trains exactly as it does.
 */

/** The built-in families' window: C = 256 tokens, K = 4 windows. */
export const PRESET_ROLLOUT = { contextWindow: 256, maxWindows: 4 };

/**
 * SFT recipe (docs/sft.md): a dense warm-up whose recall stage runs until held-out recall accuracy
 * reaches 0.9, then the lookup and episode forms, then episode SFT on fresh episodes every epoch
 * with short kv-ledger streams mixed in; lossy(0.2) summaries leave RL room on both sides; two
 * layers. The measurements behind each choice: docs/decisions/0030.
 */
export const QUICK_SFT = {
  episodes: 512,
  epochs: 20,
  data: 'fresh',
  lossyP: 0.2,
  lr: 1e-3,
  batchTokens: 2048,
  mix: {
    'kv-ledger': [
      { share: 0.45, knobs: { chunks: 1 } },
      { share: 0.2, knobs: { chunks: 2 } },
    ],
  },
  dense: { steps: 3000, ...PRESET_RECALL_STAGE, summaryShare: 0.5, maxChunks: 8, evalEvery: 500 },
  // Positions up to 2C, so that the base also acts in the 2x-context system's single window (method
  // §7). RoPE has no parameters: the training itself is the same as with maxSeqLen = C.
  model: { preset: 'reference-2l', maxSeqLen: 2 * PRESET_ROLLOUT.contextWindow },
  rollout: PRESET_ROLLOUT,
} as const satisfies Omit<SftConfigInput, 'env' | 'seed'>;

/**
 * The full preset's base imitates a demonstrator whose final decision slips with p = 0.2, so RL
 * w/o compaction has something to learn at x1 (docs/decisions/0028-demonstrator-slips.md).
 */
export const FULL_SFT = { ...QUICK_SFT, slipP: 0.2 } as const satisfies Omit<SftConfigInput, 'env' | 'seed'>;

/**
 * Per-family SFT overrides: lossy p (and hop-search's goal-drop rate) put each base where RL has
 * room on both sides; kv-ledger slips less because a wrong value in view costs it more than p
 * (docs/decisions/0030).
 */
export const SFT_BY_ENV = {
  'kv-ledger': { slipP: 0.1 },
  'fog-courier': { lossyP: 0.3 },
  'hop-search': { lossyP: 0.4, lossyGoalP: 0.4 },
} as const;

/**
 * kv-ledger knobs of the presets: 1 query and no overwrites, so the summary is plain long-range
 * recall; the long horizon (up to 12 chunks, ~3 windows) is kept. The family's defaults, kept
 * explicit so that a later change of the defaults does not silently change what the presets
 * measure (docs/decisions/0030).
 */
export const KV_KNOBS = { queries: 1, overwriteRate: 0, minChunks: 1, chunks: 12 };

/**
 * Task lengths of the presets, drawn per task (docs/tasks.md, "Task lengths"): a third to a half
 * of the evaluation tasks fit one window and the rest need two or three, so RL w/o compaction earns
 * reward on the short ones (the shares: docs/decisions/0030). The families' defaults; kept explicit.
 */
export const KNOBS = {
  'kv-ledger': KV_KNOBS,
  'fog-courier': { minRoute: 3, route: 10 },
  'hop-search': { minHops: 1, hops: 5 },
};

/**
 * RL settings the presets pin (equal to the TrainConfig defaults, which say why), so a preset's
 * results do not move if a default changes.
 */
export const RL_OPTIM = { policyLr: 1e-4 };

/** RL of the quick preset (and of table4-mixed, whose seed 0 is the quick preset's). */
export const QUICK_TRAIN = {
  iterations: 24,
  batchEpisodes: 16,
  checkpointEvery: 4,
  rollout: PRESET_ROLLOUT,
  model: { preset: 'reference-2l' },
  optim: RL_OPTIM,
  ppo: { criticWarmupIterations: 2 },
} as const satisfies TrainConfigInput;

/** RL of the full preset (and of credit, whose systems it compares on the same recipe). */
export const FULL_TRAIN = { ...QUICK_TRAIN, iterations: 40, checkpointEvery: 5 } as const satisfies TrainConfigInput;

/** The credit comparisons' systems (docs/credit.md): CompactionRL, two baselines, every credit choice. */
export const CREDIT_COMPARED = ['compaction-rl', 'no-cross-trajectory-gae', 'broadcast', ...CREDIT_SYSTEMS] as const;

/**
 * The paired comparisons' evaluation (table4-mixed, the credit presets): x1 and x4 on `tasks` tasks,
 * no writer swaps or held-out variants.
 */
export const pairedEval = (tasks: number): Preset['eval'] => ({
  tasks,
  samplesPerTask: 4,
  windows: [1, 4],
  longerWindows: [],
  writers: [],
  writerSystems: [],
  heldOutVariants: 0,
  heldOutSystems: [],
});
