import { z } from 'zod';
import { modelPresetSchema } from '../model/network/config.ts';
import { LoraSectionSchema } from '../model/lora/lora-config.ts';
import { compactionGaeConfigSchema } from '../rl/advantage-estimators.ts';
import { ppoConfigSchema } from '../rl/ppo-config.ts';
import { RolloutConfigSchema } from '../rollout/config.ts';
import { FaultPolicySchema } from '../rollout/faults.ts';
import { EngineSectionSchema, QueueSectionSchema, TrainerSectionSchema } from './execution-config.ts';
import { samplingProblems } from './sampling-problems.ts';

/**
 * The training configuration: one documented record (CleanRL's "config is one record"), zod as
 * the single source of truth. The rollout, PPO and advantage blocks reuse the owning modules'
 * schemas so there is one definition of each knob. Every object is strict: an unknown key is an
 * error naming the key (src/config/config-error.ts).
 */

/** method §7 "systems compared": the three training algorithms. */
export const ALGORITHMS = ['compaction-rl', 'ppo-single-window', 'broadcast'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

export const AblationSchema = z
  .object({
    /** method §5: summary tokens in the policy loss (false = the Table 3 ablation). */
    trainSummaries: z.boolean().default(true),
    /** method §5: 'token-mean' is the paper's; 'segment-mean' is the Table 4 ablation. */
    lossAggregation: z.enum(['token-mean', 'segment-mean']).default('token-mean'),
    /** method §4: the (gamma*lambda)^N_after correction (false = the Table 4 ablation). */
    crossTrajectory: z.boolean().default(true),
  })
  .strict();

export const EnvConfigSchema = z
  .object({
    /** A registered task family (src/env/registry.ts). */
    name: z.string().min(1).default('kv-ledger'),
    /** Overrides of the family's default knobs; validated by the family's own schema at run time. */
    knobs: z.record(z.string(), z.unknown()).default({}),
    /**
     * Every environment step waits this long (ms) first, as a sandbox or a test suite does: an
     * I/O-bound setting for measuring rollout throughput (docs/distributed.md). Absent: 0.
     */
    stepDelayMs: z.number().int().nonnegative().optional(),
  })
  .strict();

/** The switches live in `ablation`, so the PPO block omits them (one place per knob, defaults in rl/ppo-config.ts). */
export const TrainPpoSchema = ppoConfigSchema.omit({ trainSummaries: true, lossAggregation: true });

/**
 * gamma, lambda (fixed or length-adaptive) and lambda_critic (method §4); how R reaches each
 * segment (segmentReward, segmentDiscount); and which estimator (docs/credit.md).
 */
export const TrainAdvantageSchema = compactionGaeConfigSchema.omit({ crossTrajectory: true }).extend({
  /**
   * 'full-trajectory-gae': one GAE chain across the compaction boundaries instead of method §4's
   * local GAE + correction (compaction-rl only). Absent: the algorithm's own estimator.
   */
  estimator: z.enum(['compaction-gae', 'full-trajectory-gae']).optional(),
});

export const OptimSchema = z
  .object({
    /**
     * 1e-4: at 3e-4 RL runs collapsed late; at 1e-4 they stayed stable (docs/decisions/0030).
     */
    policyLr: z.number().positive().default(1e-4),
    criticLr: z.number().positive().default(5e-4),
    gradClip: z.number().nonnegative().default(1),
    weightDecay: z.number().nonnegative().default(0),
    warmupSteps: z.number().int().nonnegative().default(0),
  })
  .strict();

export const ModelSectionSchema = z
  .object({
    /** A model preset (src/model/network/config.ts). */
    preset: modelPresetSchema.default('reference'),
    /** Checkpoint to start from (the SFT base); absent = fresh weights. */
    init: z.string().min(1).optional(),
    /**
     * K: the critic is the policy's embeddings and first K layers (copied from the policy, method
     * §6), a value head on top; absent: all layers, the method's critic. What makes a 0.6B run fit
     * in memory (docs/engine-scale.md "Training memory", docs/decisions/0045).
     */
    criticLayers: z.number().int().positive().optional(),
    /**
     * 'frozen': the critic's embedding table (copied from the policy) is not trained, so it has no
     * gradient or AdamW moments: 1.9 GB less at Qwen3-0.6B's vocabulary (what brings a 0.6B LoRA
     * run under 6 GB, docs/lora.md). Absent: 'trained', the method's critic.
     */
    criticEmbedding: z.enum(['trained', 'frozen']).optional(),
    /**
     * Keep only each layer's input for the backward and recompute the rest there: a layer's
     * activations cost C floats per token instead of about 26 C, for one more trunk forward per
     * backward; gradients are bit-identical. Absent: off (docs/engine-scale.md "Training memory").
     */
    recompute: z.boolean().optional(),
    /**
     * LoRA: the policy's base weights frozen, adapters of this rank trained on the listed
     * projections (model/lora/, docs/lora.md); absent: every weight is trained.
     */
    lora: LoraSectionSchema.optional(),
  })
  .strict();

export const TrainConfigSchema = z
  .object({
    /** System label for reports (method §7 names, e.g. 'compaction-rl', 'segment-mean-loss'). */
    name: z.string().min(1).default('compaction-rl'),
    algorithm: z.enum(ALGORITHMS).default('compaction-rl'),
    ablation: AblationSchema.prefault({}),
    env: EnvConfigSchema.prefault({}),
    /**
     * word | qwen3 | a tokenizer directory (docs/decisions/0012). Default: model.init's own, else
     * word. A model.init trained with another tokenizer is refused.
     */
    tokenizer: z.string().min(1).optional(),
    /** C, T_comp, k (tailSteps), K (maxWindows), L_sum, ... (src/rollout/config.ts). */
    rollout: RolloutConfigSchema.prefault({}),
    /** B: episodes per iteration, one per task (method §6). */
    batchEpisodes: z.number().int().positive().default(16),
    /** Episodes per task within a batch; broadcast's group baseline needs > 1 (method §7). */
    groupSize: z.number().int().positive().default(1),
    ppo: TrainPpoSchema.prefault({}),
    advantage: TrainAdvantageSchema.prefault({}),
    optim: OptimSchema.prefault({}),
    model: ModelSectionSchema.prefault({}),
    seed: z.number().int().nonnegative().default(0),
    iterations: z.number().int().positive().default(20),
    checkpointEvery: z.number().int().positive().default(5),
    /** Episodes per iteration rendered to the run's samples/ (human-readable trajectories). */
    sampleTrajectories: z.number().int().nonnegative().default(2),
    /**
     * Write TensorBoard event files to the run directory: the metrics and timing numbers as
     * scalars, the sampled episodes as text (docs/tensorboard.md). Absent: on (`--no-tensorboard`: false).
     */
    tensorboard: z.boolean().optional(),
    /**
     * Episodes that end in a fault (a sandbox, verifier or engine failure, not the agent's doing)
     * are retried, else left out of the update; too many stop the run (docs/faults.md). Absent:
     * the defaults of rollout/faults.ts (1 retry, stop above half the batch).
     */
    faults: FaultPolicySchema.optional(),
    /**
     * S: how many policy versions old a trained segment may be (docs/async.md). 0 or absent: the
     * synchronous loop (method §6), each batch sampled by the weights it trains. S > 0: batches of
     * later iterations are sampled while earlier ones train, at most S at once.
     */
    maxStaleness: z.number().int().min(0).optional(),
    /**
     * Sample on a remote engine instead of in-process (docs/decisions/0010). Before each
     * iteration the policy is written to <run>/engine-weights and loaded by the engine through
     * SGLang's update_weights_from_disk, which `crl serve` also implements. vLLM has no such
     * endpoint, so 'vllm' trains only a LoRA run that pushes adapters (lora 'on', docs/lora.md).
     * The engine's sampling randomness is its own: a resumed run does not replay the same episodes.
     */
    engine: EngineSectionSchema.optional(),
    /**
     * Where the update runs (docs/torch-trainer.md): absent = the embedded engine in this process;
     * 'torch' = a PyTorch trainer process that crl drives over a pipe (rollouts stay here).
     */
    trainer: TrainerSectionSchema.optional(),
    /**
     * Run each iteration's episodes on rollout workers (`crl worker`) through a Redis queue
     * instead of in this process (docs/distributed.md). Workers sample on the engines of
     * `engine` (or run the scripted expert); the trainer waits for the whole batch.
     */
    queue: QueueSectionSchema.optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    // docs/credit.md: the estimator and the segment rewards are choices inside CompactionRL's PPO.
    if (c.advantage.estimator !== undefined && c.algorithm !== 'compaction-rl') {
      ctx.addIssue({
        code: 'custom',
        path: ['advantage', 'estimator'],
        message: `advantage.estimator applies to algorithm 'compaction-rl' only (got '${c.algorithm}')`,
      });
    }
    if (c.advantage.estimator === 'full-trajectory-gae' && c.advantage.segmentReward !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['advantage', 'segmentReward'],
        message: "full-trajectory-gae puts R on the episode's last token only; leave advantage.segmentReward out",
      });
    }
    if (c.advantage.estimator === 'full-trajectory-gae' && !c.ablation.crossTrajectory) {
      ctx.addIssue({
        code: 'custom',
        path: ['ablation', 'crossTrajectory'],
        message:
          'full-trajectory-gae has no cross-trajectory correction to turn off; leave ablation.crossTrajectory out',
      });
    }
    if (c.advantage.segmentDiscount !== undefined && c.advantage.segmentReward !== 'discounted') {
      ctx.addIssue({
        code: 'custom',
        path: ['advantage', 'segmentDiscount'],
        message: "advantage.segmentDiscount is used only with advantage.segmentReward 'discounted'",
      });
    }
    for (const issue of samplingProblems(c)) ctx.addIssue({ code: 'custom', ...issue });
    if (c.ppo.tisLevel === 'sequence' && c.ppo.offPolicy !== 'tis')
      ctx.addIssue({
        code: 'custom',
        path: ['ppo', 'tisLevel'],
        message: `'sequence' applies to ppo.offPolicy 'tis' only (got '${c.ppo.offPolicy ?? 'none'}')`,
      });
    if (c.engine?.protocol === 'vllm' && (c.engine.lora !== 'on' || !c.model.lora || c.queue))
      ctx.addIssue({
        code: 'custom',
        path: ['engine', 'protocol'],
        message:
          "'vllm' has no update_weights_from_disk: it trains only a LoRA run that pushes its adapters (model.lora with engine.lora 'on', no queue); use 'sglang'",
      });
    if (c.engine?.lora === 'on' && !c.model.lora)
      ctx.addIssue({
        code: 'custom',
        path: ['engine', 'lora'],
        message:
          "'on' pushes a LoRA run's adapters; this run trains every weight (add --lora-rank, or leave --engine-lora out)",
      });
    if (c.engine?.lora === 'on' && c.queue)
      ctx.addIssue({
        code: 'custom',
        path: ['engine', 'lora'],
        message:
          "'on' needs the trainer's own engine pool; rollout workers (--queue) sample the pushed weights by version only (leave --engine-lora out: the merged weights are pushed)",
      });
    // method §7: RL w/o compaction is single-window PPO; any other K would be a different system.
    if (c.algorithm === 'ppo-single-window' && c.rollout.maxWindows !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['rollout', 'maxWindows'],
        message: `algorithm 'ppo-single-window' needs rollout.maxWindows = 1 (got ${c.rollout.maxWindows})`,
      });
    }
  });

export type TrainConfig = z.infer<typeof TrainConfigSchema>;

/**
 * The config without where its episodes run (`engine`, `queue`, `env.stepDelayMs`): what a run
 * learns. Reuse checks and policy hashes compare this, so the same run made in one process or
 * on rollout workers and engine replicas counts as the same run (docs/distributed.md).
 */
export function learningConfig(config: unknown): unknown {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return config;
  const { engine: _engine, queue: _queue, ...rest } = config as Record<string, unknown>;
  const env = rest.env;
  if (env !== null && typeof env === 'object' && !Array.isArray(env)) {
    const { stepDelayMs: _delay, ...envRest } = env as Record<string, unknown>;
    return { ...rest, env: envRest };
  }
  return rest;
}

/** What a config file or flags may contain before defaults are applied. */
export type TrainConfigInput = z.input<typeof TrainConfigSchema>;
