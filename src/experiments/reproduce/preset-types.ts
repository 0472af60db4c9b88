import type { TrainConfigInput } from '../../config/train-config.ts';
import type { SftConfigInput } from '../sft/sft-config.ts';
import type { SystemName } from './systems.ts';

/** What a `crl reproduce` preset holds (presets.ts registers them; docs/decisions/0007-experiments.md). */
export interface EvalPlan {
  /** Evaluation tasks per env (family eval seeds) and samples per task (method §8: n >= 4). */
  tasks: number;
  samplesPerTask: number;
  /** Modes at the same C: x1 and the training K. */
  windows: number[];
  /** Longer-horizon modes (more windows than training used); [] to skip. */
  longerWindows: number[];
  /** Table 1: summary writers swapped under these acting systems. */
  writers: string[];
  writerSystems: SystemName[];
  /** Held-out variants evaluated per env (the first N the family defines), for these systems. */
  heldOutVariants: number;
  heldOutSystems: SystemName[];
}

export interface Preset {
  description: string;
  /** word (default) | qwen3 | a tokenizer directory: set by withTokenizer (preset-tokenizer.ts), recorded in pipeline.json. */
  tokenizer?: string;
  /** text (default) | tools, and the thinking block: set by withAgentFormat (preset-agent-format.ts), recorded in pipeline.json. */
  agentFormat?: 'text' | 'tools';
  thinking?: boolean;
  envs: string[];
  /** Per-env knob overrides used by SFT, training and evaluation (held-out variants apply on top). */
  knobs?: Readonly<Record<string, Record<string, unknown>>>;
  /** Per-env knobs for RL training and evaluation only, on top of `knobs` (the SFT base keeps `knobs`). */
  rlKnobs?: Readonly<Record<string, Record<string, unknown>>>;
  seeds: number[];
  /**
   * One SFT base for every seed: the base of this seed. Unset: each seed trains its own base. Set,
   * the seeds are RL seeds from a shared start, so paired differences between RL systems measure
   * the RL algorithm with the base held fixed (the `table4` preset).
   */
  baseSeed?: number;
  /** RL systems trained after the SFT base (base is always evaluated). */
  systems: SystemName[];
  sft: Omit<SftConfigInput, 'env' | 'seed'>;
  /** Per-env SFT overrides merged over `sft` (e.g. fog-courier's lossy p). */
  sftByEnv?: Readonly<Record<string, Partial<Omit<SftConfigInput, 'env' | 'seed'>>>>;
  train: TrainConfigInput;
  eval: EvalPlan;
  /**
   * Per env: RL and evaluation run on the family's tasks written as Harbor task folders (the
   * pipeline's `tasks/<env>/train` and `tasks/<env>/eval`, `train` and `eval` tasks from the
   * family's two seed ranges), through the same path as any task set (`--env harbor:PATH`); the
   * SFT base still learns from the family's expert. Evaluation then has no scripted summary
   * writers (writers: null only) and no held-out variants. `knobs` are the task set's own
   * (env/harbor/task-set.ts: sandbox, commandTimeoutSec, outputBytes).
   */
  taskSets?: Readonly<Record<string, { train: number; eval: number; knobs?: Record<string, unknown> }>>;
}
