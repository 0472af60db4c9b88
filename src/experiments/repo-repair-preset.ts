import type { TrainConfigInput } from '../config/train-config.ts';
import { REPO_REPAIR_ROLLOUT } from '../env/repo-repair/index.ts';
import type { Preset } from './preset-types.ts';
import { PRESET_RECALL_STAGE } from './dense-warmup.ts';
import type { SftConfigInput } from './sft-config.ts';

/** repo-repair's own sizes (the family's), with the K every preset uses. */
const REPO_REPAIR_PRESET_ROLLOUT = { ...REPO_REPAIR_ROLLOUT, maxWindows: 4 };

/**
 * repo-repair's SFT: the terminal preset's recipe (docs/sft.md) in this family's sizes: the
 * family-independent recall stage alone (the family has no dense generator yet), then 12 epochs of 512
 * fresh expert episodes, a third of them on short modules (the bug in the first read, one window),
 * summaries lossy(0.3) as the terminal preset's.
 */
const REPO_REPAIR_SFT = {
  episodes: 512,
  epochs: 12,
  data: 'fresh',
  lossyP: 0.3,
  lr: 1e-3,
  batchTokens: 4096,
  tokenizer: 'qwen3',
  mix: { 'repo-repair': [{ share: 0.3, knobs: { minFunctions: 2, maxFunctions: 2 } }] },
  dense: { steps: PRESET_RECALL_STAGE.recallSteps, ...PRESET_RECALL_STAGE },
  model: { preset: 'reference-2l', maxSeqLen: REPO_REPAIR_PRESET_ROLLOUT.contextWindow },
  rollout: REPO_REPAIR_PRESET_ROLLOUT,
} as const satisfies Omit<SftConfigInput, 'env' | 'seed'>;

/**
 * The software-engineering family (docs/tasks.md, repo-repair): a Python package's planted bug
 * fixed with real shell commands and graded by its pytest suite in the bubblewrap sandbox, Qwen3
 * tokens, the family's sizes. The SFT base, RL w/o compaction and CompactionRL over three seeds,
 * evaluated as the terminal preset is. Needs bubblewrap and Debian's python3-pytest.
 */
export function repoRepairPreset(optim: TrainConfigInput['optim']): Preset {
  return {
    description:
      'repo-repair (Python package, planted bug, pytest grading in the sandbox, Qwen3 tokens): base, RL w/o compaction and CompactionRL, 3 seeds; oracle, null and lossy summaries',
    tokenizer: 'qwen3',
    envs: ['repo-repair'],
    seeds: [0, 1, 2],
    systems: ['ppo-single-window', 'compaction-rl'],
    sft: REPO_REPAIR_SFT,
    train: {
      iterations: 24,
      batchEpisodes: 16,
      checkpointEvery: 4,
      rollout: REPO_REPAIR_PRESET_ROLLOUT,
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
