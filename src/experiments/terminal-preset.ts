import type { TrainConfigInput } from '../config/train-config.ts';
import { SHELL_LEDGER_ROLLOUT } from '../env/shell-ledger/index.ts';
import type { Preset } from './presets.ts';
import type { SftConfigInput } from './sft-config.ts';

/** shell-ledger's own sizes (the family's), with the K every preset uses. */
const TERMINAL_ROLLOUT = { ...SHELL_LEDGER_ROLLOUT, maxWindows: 4 };

/**
 * The terminal family's SFT: the quick recipe's stages (recall stage, the family's dense forms,
 * episode SFT on fresh expert episodes at lossy 0.2 with short logs mixed in), cut to fit a
 * shared 2-core machine in under an hour with every episode in the sandbox: 700 warm-up steps (300
 * of recall) at 8 sequences per step, 16 epochs of 256 episodes. Less than the word-vocabulary
 * recipe (3000 steps, 20 x 512 episodes); with 8 epochs of 128 the base passed nothing (x4 0/48)
 * and CompactionRL had no reward to learn from (docs/results/README.md).
 */
const TERMINAL_SFT = {
  episodes: 256,
  epochs: 16,
  data: 'fresh',
  lossyP: 0.2,
  lr: 1e-3,
  batchTokens: 4096,
  tokenizer: 'qwen3',
  mix: { 'shell-ledger': [{ share: 0.3, knobs: { minParts: 1, maxParts: 3 } }] },
  dense: {
    steps: 700,
    recallSteps: 300,
    recallBatch: 128,
    batch: 8,
    summaryShare: 0.5,
    maxChunks: 5,
    evalEvery: 350,
  },
  model: { preset: 'reference-2l', maxSeqLen: TERMINAL_ROLLOUT.contextWindow },
  rollout: TERMINAL_ROLLOUT,
} as const satisfies Omit<SftConfigInput, 'env' | 'seed'>;

/**
 * The terminal family (docs/tasks.md, shell-ledger): real shell commands in the bubblewrap
 * sandbox, the Qwen3 tokenizer, the family's sizes (C = 512). The SFT base and CompactionRL, one
 * seed: the Table 1 / Table 2 analogues without the other RL systems, sized for under an hour on a
 * shared 2-core machine (see TERMINAL_SFT for what the base gets). Needs bubblewrap.
 */
export function terminalPreset(optim: TrainConfigInput['optim']): Preset {
  return {
    description:
      'shell-ledger (real shell in the sandbox, Qwen3 tokens, C = 512): base + CompactionRL, one seed; oracle and null summaries under the base',
    tokenizer: 'qwen3',
    envs: ['shell-ledger'],
    seeds: [0],
    systems: ['compaction-rl'],
    sft: TERMINAL_SFT,
    train: {
      iterations: 16,
      batchEpisodes: 16,
      checkpointEvery: 4,
      rollout: TERMINAL_ROLLOUT,
      model: { preset: 'reference-2l' },
      optim,
      ppo: { criticWarmupIterations: 2 },
    },
    eval: {
      tasks: 12,
      samplesPerTask: 4,
      windows: [1, 4],
      longerWindows: [],
      writers: ['oracle', 'null'],
      writerSystems: ['base'],
      heldOutVariants: 0,
      heldOutSystems: [],
    },
  };
}
