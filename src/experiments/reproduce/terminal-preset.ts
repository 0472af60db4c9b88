import type { TrainConfigInput } from '../../config/train-config.ts';
import { SHELL_LEDGER_ROLLOUT } from '../../env/shell-ledger/index.ts';
import type { Preset } from './preset-types.ts';
import { PRESET_RECALL_STAGE } from '../sft/dense-warmup.ts';
import type { SftConfigInput } from '../sft/sft-config.ts';

/** shell-ledger's own sizes (the family's), with the K every preset uses. */
const TERMINAL_ROLLOUT = { ...SHELL_LEDGER_ROLLOUT, maxWindows: 4 };

/**
 * The terminal family's SFT: the quick recipe (docs/sft.md) in shell-ledger's sizes: a 3000-step
 * dense warm-up whose recall stage runs until held-out recall accuracy reaches 0.9, then 12 epochs
 * of 512 fresh expert episodes with short logs mixed in (the quick recipe runs 20; every episode
 * here runs in the sandbox). Summaries lossy(0.3), as fog-courier: lossy p is how the presets set
 * a base's summary quality; at 0.2 this base left RL little room (docs/decisions/0030).
 */
const TERMINAL_SFT = {
  episodes: 512,
  epochs: 12,
  data: 'fresh',
  lossyP: 0.3,
  lr: 1e-3,
  batchTokens: 4096,
  tokenizer: 'qwen3',
  mix: { 'shell-ledger': [{ share: 0.3, knobs: { minParts: 1, maxParts: 3 } }] },
  dense: { steps: 3000, ...PRESET_RECALL_STAGE, summaryShare: 0.5, maxChunks: 5, evalEvery: 500 },
  model: { preset: 'reference-2l', maxSeqLen: TERMINAL_ROLLOUT.contextWindow },
  rollout: TERMINAL_ROLLOUT,
} as const satisfies Omit<SftConfigInput, 'env' | 'seed'>;

/**
 * The terminal family (docs/tasks.md, shell-ledger): real shell commands in the bubblewrap
 * sandbox, the Qwen3 tokenizer, the family's sizes (C = 512). The SFT base, RL w/o compaction and
 * CompactionRL over three seeds: the Table 1 / Table 2 analogues (oracle, null and lossy summaries
 * under the base and CompactionRL). Needs bubblewrap.
 */
export function terminalPreset(optim: TrainConfigInput['optim']): Preset {
  return {
    description:
      'shell-ledger (real shell in the sandbox, Qwen3 tokens, C = 512): base, RL w/o compaction and CompactionRL, 3 seeds; oracle, null and lossy summaries',
    tokenizer: 'qwen3',
    envs: ['shell-ledger'],
    seeds: [0, 1, 2],
    systems: ['ppo-single-window', 'compaction-rl'],
    sft: TERMINAL_SFT,
    train: {
      iterations: 24,
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
      writers: ['oracle', 'null', 'lossy:0.3'],
      writerSystems: ['base', 'compaction-rl'],
      heldOutVariants: 0,
      heldOutSystems: [],
    },
  };
}

/**
 * The terminal preset through task folders (docs/harbor.md, "Training on task folders"): the same
 * SFT base (shell-ledger's expert), then RL on 512 shell-ledger training tasks written as Harbor
 * task folders and evaluation on 12 evaluation tasks written the same way, every episode run as
 * any task set runs (`--env harbor:PATH`). The folders' commands get shell-ledger's own 20 s
 * limit, so an episode is the family's episode. Task folders have no scripted summary writer:
 * Table 1 keeps the null writer only.
 */
export function terminalTasksPreset(optim: TrainConfigInput['optim']): Preset {
  const terminal = terminalPreset(optim);
  return {
    ...terminal,
    description:
      'terminal through task folders: shell-ledger written as Harbor task folders (512 train, 12 eval), RL and evaluation on them as on any task set; base, RL w/o compaction and CompactionRL, 3 seeds',
    taskSets: { 'shell-ledger': { train: 512, eval: 12, knobs: { commandTimeoutSec: 20 } } },
    eval: { ...terminal.eval, writers: ['null'] },
  };
}
