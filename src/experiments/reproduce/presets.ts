import { SHELL_LEDGER_ROLLOUT } from '../../env/shell-ledger/index.ts';
import {
  CREDIT_COMPARED,
  FULL_SFT,
  FULL_TRAIN,
  KNOBS,
  KV_KNOBS,
  pairedEval,
  PRESET_ROLLOUT,
  QUICK_SFT,
  QUICK_TRAIN,
  RL_OPTIM,
  SFT_BY_ENV,
} from './preset-recipes.ts';
import type { Preset } from './preset-types.ts';
import { repoRepairPreset } from './repo-repair-preset.ts';
import { ASYNC_SYSTEMS, PAPER_RL_SYSTEMS } from './systems.ts';
import { terminalPreset, terminalTasksPreset } from './terminal-preset.ts';

/**
 * `crl reproduce` presets (registry, not branches), built from the recipes of preset-recipes.ts.
 * Sizes are chosen for 2 CPU cores; see docs/decisions/0007-experiments.md for the measured costs
 * behind them.
 */

/** shell-ledger's own sizes with K = 4 (the smoke check of training on task folders). */
const SMOKE_TASKS_ROLLOUT = { ...SHELL_LEDGER_ROLLOUT, maxWindows: 4 };

/** docs/async.md: CompactionRL at S = 0 against S = 1, 2 with and without decoupled PPO (see 'async-mixed'). */
const ASYNC_MIXED: Preset = {
  description:
    'asynchronous rollouts (docs/async.md) in the table4-mixed regime: kv-ledger 1-12 chunks, K = 4, one shared base, 3 RL seeds; CompactionRL at S = 0 vs S = 1, 2 without a correction and with decoupled PPO',
  envs: ['kv-ledger'],
  knobs: { 'kv-ledger': KV_KNOBS },
  seeds: [0, 1, 2],
  baseSeed: 0,
  systems: ['compaction-rl', ...ASYNC_SYSTEMS],
  sft: QUICK_SFT,
  train: QUICK_TRAIN,
  eval: pairedEval(12),
};

const PRESETS: Readonly<Record<string, Preset>> = {
  quick: {
    description:
      'kv-ledger (1 query, no overwrites, 1-12 chunks), base + all seven RL systems, one seed (target: < 15 min on 2 cores)',
    envs: ['kv-ledger'],
    knobs: { 'kv-ledger': KV_KNOBS },
    seeds: [0],
    systems: [...PAPER_RL_SYSTEMS], // every RL system of method §7
    sft: QUICK_SFT,
    train: QUICK_TRAIN,
    eval: {
      tasks: 12,
      samplesPerTask: 4,
      windows: [1, 4],
      longerWindows: [8],
      writers: ['oracle', 'null'],
      writerSystems: ['base'],
      heldOutVariants: 1,
      heldOutSystems: ['base', 'compaction-rl'],
    },
  },
  full: {
    description: 'all families, every system, 3 seeds (target: < 3 h on 2 cores)',
    envs: ['kv-ledger', 'fog-courier', 'hop-search'],
    knobs: KNOBS,
    seeds: [0, 1, 2],
    systems: [...PAPER_RL_SYSTEMS], // every RL system of method §7
    // The quick recipe with slips; fog-courier and hop-search run their own dense forms (docs/tasks.md).
    sft: FULL_SFT,
    sftByEnv: SFT_BY_ENV,
    train: FULL_TRAIN,
    eval: {
      tasks: 16,
      samplesPerTask: 4,
      windows: [1, 4],
      longerWindows: [8],
      writers: ['oracle', 'null', 'lossy:0.3'],
      writerSystems: ['base', 'compaction-rl'],
      heldOutVariants: 2,
      heldOutSystems: ['base', 'ppo-single-window', 'compaction-rl'],
    },
  },
  /**
   * Table 4's regime (docs/results/table4-log.md): long kv-ledger streams, 20-28 chunks (the
   * expert needs 5-7 windows), K = 8, where the first summary that holds the queried value pays
   * off only windows later. One SFT base (the full preset's kv-ledger recipe, seed 0) and five RL
   * seeds, so the paired differences between the RL systems measure the RL algorithm alone.
   */
  table4: {
    description:
      'Table 4 regime: kv-ledger with 20-28 chunks (5-7 windows), K = 8, one SFT base, 5 RL seeds; CompactionRL vs its optimization ablations and broadcast',
    envs: ['kv-ledger'],
    knobs: { 'kv-ledger': KV_KNOBS },
    rlKnobs: { 'kv-ledger': { minChunks: 20, chunks: 28 } },
    seeds: [0, 1, 2, 3, 4],
    baseSeed: 0,
    systems: ['compaction-rl', 'no-cross-trajectory-gae', 'broadcast', 'segment-mean-loss'],
    sft: QUICK_SFT,
    train: {
      iterations: 40,
      batchEpisodes: 16,
      checkpointEvery: 5,
      rollout: { ...PRESET_ROLLOUT, maxWindows: 8 },
      model: { preset: 'reference-2l' },
      optim: RL_OPTIM,
      ppo: { criticWarmupIterations: 2 },
    },
    eval: {
      tasks: 16,
      samplesPerTask: 4,
      windows: [8],
      longerWindows: [],
      writers: [],
      writerSystems: [],
      heldOutVariants: 0,
      heldOutSystems: [],
    },
  },
  /**
   * Table 4 in the quick preset's regime (docs/results/table4-log.md, P2): mixed lengths (kv-ledger
   * 1-12 chunks, a third to a half of the tasks fit one window), K = 4, 24 iterations, the quick
   * preset's SFT base (seed 0) shared by five RL seeds, CompactionRL against its optimization
   * ablations and broadcast. Seed 0 trains and evaluates exactly as in the quick preset.
   */
  'table4-mixed': {
    description:
      'Table 4 regime with mixed lengths: the quick preset (kv-ledger 1-12 chunks, K = 4) with its base shared by 5 RL seeds; CompactionRL vs its optimization ablations and broadcast',
    envs: ['kv-ledger'],
    knobs: { 'kv-ledger': KV_KNOBS },
    seeds: [0, 1, 2, 3, 4],
    baseSeed: 0,
    systems: ['compaction-rl', 'segment-mean-loss', 'no-cross-trajectory-gae', 'broadcast'],
    sft: QUICK_SFT,
    train: QUICK_TRAIN,
    eval: pairedEval(12),
  },
  /**
   * Asynchronous rollouts (docs/async.md) in table4-mixed's regime: the quick preset's CompactionRL
   * trained synchronously (S = 0) and with batches sampled up to S = 1 or 2 policy versions behind,
   * each without a correction and with decoupled PPO; the quick base (seed 0) shared by three RL
   * seeds, so each paired difference measures the staleness and the correction alone. Seed 0's
   * CompactionRL trains exactly as in the quick preset.
   */
  'async-mixed': ASYNC_MIXED,
  /**
   * async-mixed with a policy that moves three times as far per update (policy lr 3e-4, as in the
   * kv-ledger lr probe of docs/results): the same systems where the behaviour policy lags further
   * behind the trained one, so the importance weights leave 1 and the correction has work to do.
   */
  'async-mixed-lr3e-4': {
    ...ASYNC_MIXED,
    description:
      'async-mixed with policy lr 3e-4 (three times the quick recipe): S = 0 vs S = 1, 2 without a correction and with decoupled PPO where the behaviour policy lags further behind',
    train: { ...QUICK_TRAIN, optim: { ...RL_OPTIM, policyLr: 3e-4 } },
  },
  /**
   * Credit across compaction boundaries (docs/credit.md) in table4-mixed's regime: the quick
   * preset's kv-ledger (1-12 chunks, K = 4), its SFT base (seed 0) shared by five RL seeds, so the
   * paired differences measure the credit choice alone. CompactionRL, its cross-trajectory
   * ablation, broadcast, and every estimator, weighting and whitening of docs/credit.md. Seed 0's
   * first four systems train exactly as in table4-mixed.
   */
  'credit-mixed': {
    description:
      'credit assignment across compactions (docs/credit.md) in the table4-mixed regime: kv-ledger 1-12 chunks, K = 4, one shared base, 5 RL seeds; CompactionRL vs full-trajectory GAE, segment weights and rewards, whitening modes',
    envs: ['kv-ledger'],
    knobs: { 'kv-ledger': KV_KNOBS },
    seeds: [0, 1, 2, 3, 4],
    baseSeed: 0,
    systems: [...CREDIT_COMPARED],
    sft: QUICK_SFT,
    train: QUICK_TRAIN,
    eval: pairedEval(12),
  },
  /**
   * The same comparison on the three built-in families with the full preset's recipe (a base per
   * family that slips, 40 iterations), each family's base (seed 0) shared by five RL seeds:
   * 3 families x 5 seeds x 10 systems = 150 RL runs, several times the full preset's cost.
   */
  credit: {
    description:
      'credit assignment across compactions (docs/credit.md) on all three families: the full recipe, one shared base per family, 5 RL seeds, 10 systems (150 RL runs)',
    envs: ['kv-ledger', 'fog-courier', 'hop-search'],
    knobs: KNOBS,
    seeds: [0, 1, 2, 3, 4],
    baseSeed: 0,
    systems: [...CREDIT_COMPARED],
    sft: FULL_SFT,
    sftByEnv: SFT_BY_ENV,
    train: FULL_TRAIN,
    eval: pairedEval(16),
  },
  /** For tests and CI: the runtime's chunk-sum task, a tiny model, seconds end to end. */
  smoke: {
    description: 'plumbing check in seconds (chunk-sum task, tiny model); numbers mean nothing',
    envs: ['chunk-sum'],
    seeds: [0],
    systems: ['ppo-single-window', 'ppo-single-window-2x', 'compaction-rl'],
    sft: { episodes: 4, epochs: 1, model: { preset: 'tiny', maxSeqLen: 512 } },
    train: {
      iterations: 2,
      batchEpisodes: 2,
      checkpointEvery: 1,
      model: { preset: 'tiny' },
      ppo: { criticWarmupIterations: 1 },
    },
    eval: {
      tasks: 2,
      samplesPerTask: 4,
      windows: [1, 4],
      longerWindows: [6],
      writers: ['null'],
      writerSystems: ['base'],
      heldOutVariants: 1,
      heldOutSystems: ['compaction-rl'],
    },
  },
  terminal: terminalPreset(RL_OPTIM),
  /**
   * The credit comparison on the terminal family (docs/credit.md): the terminal preset's base
   * (seed 0, Qwen3 tokens, real shell in the sandbox) shared by five RL seeds, the same ten
   * systems as credit-mixed, evaluated at x1 and x4 without writer swaps. Needs bubblewrap.
   */
  'credit-terminal': {
    ...terminalPreset(RL_OPTIM),
    description:
      'credit assignment across compactions (docs/credit.md) on shell-ledger (real shell, Qwen3 tokens, C = 512): the terminal base shared by 5 RL seeds, 10 systems',
    seeds: [0, 1, 2, 3, 4],
    baseSeed: 0,
    systems: [...CREDIT_COMPARED],
    eval: {
      ...terminalPreset(RL_OPTIM).eval,
      writers: [],
      writerSystems: [],
    },
  },
  'terminal-tasks': terminalTasksPreset(RL_OPTIM),
  'repo-repair': repoRepairPreset(RL_OPTIM),
  /** For tests and CI: the task-folder path of `terminal-tasks` at the smoke preset's sizes. */
  'smoke-tasks': {
    description: 'plumbing check of training on task folders (shell-ledger folders, tiny model); numbers mean nothing',
    tokenizer: 'qwen3',
    envs: ['shell-ledger'],
    seeds: [0],
    systems: ['compaction-rl'],
    sft: {
      episodes: 2,
      epochs: 1,
      tokenizer: 'qwen3',
      model: { preset: 'tiny', maxSeqLen: 512 },
      rollout: SMOKE_TASKS_ROLLOUT,
    },
    train: {
      iterations: 2,
      batchEpisodes: 2,
      checkpointEvery: 1,
      rollout: SMOKE_TASKS_ROLLOUT,
      model: { preset: 'tiny' },
      ppo: { criticWarmupIterations: 1 },
    },
    taskSets: { 'shell-ledger': { train: 3, eval: 2, knobs: { commandTimeoutSec: 20 } } },
    eval: {
      tasks: 2,
      samplesPerTask: 4,
      windows: [1, 4],
      longerWindows: [],
      writers: ['null'],
      writerSystems: ['base'],
      heldOutVariants: 0,
      heldOutSystems: [],
    },
  },
};

export function presetNames(): string[] {
  return Object.keys(PRESETS);
}

export function getPreset(name: string): Preset {
  const p = PRESETS[name];
  if (!p) throw new Error(`unknown preset ${JSON.stringify(name)}; valid presets: ${presetNames().join(', ')}`);
  return p;
}
