import { z } from 'zod';
import { modelPresetSchema } from '../../model/network/config.ts';
import { RolloutConfigSchema } from '../../rollout/config.ts';
import { FaultPolicySchema } from '../../rollout/faults.ts';
import { DenseWarmupSchema } from './dense-warmup.ts';

/**
 * The SFT base policy (method §7 "base"): expert episodes with compaction, summaries by a
 * lossy writer (so the base summarizes imperfectly and leaves room for RL), cross-entropy on the
 * generated tokens only (actions and summaries; loss masks of method §3).
 */
export const SftConfigSchema = z
  .object({
    env: z
      .object({ name: z.string().min(1).default('kv-ledger'), knobs: z.record(z.string(), z.unknown()).default({}) })
      .strict()
      .prefault({}),
    rollout: RolloutConfigSchema.prefault({}),
    /** word | qwen3 | a tokenizer directory (docs/decisions/0012); the model gets its trimmed vocabulary (0013). */
    tokenizer: z.string().min(1).default('word'),
    model: z
      .object({
        preset: modelPresetSchema.default('reference'),
        /**
         * Positions the model supports (RoPE table; no parameter depends on it). Default: C. The
         * presets set 2C so that the base can also act in one window of twice the context (the
         * 2x-context system, method §7); training data is the same either way.
         */
        maxSeqLen: z.number().int().positive().optional(),
        /** Start from these weights (a checkpoint or a Hugging Face model directory) instead of the preset's init. */
        init: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    /** Expert episodes per epoch (training seeds). */
    episodes: z.number().int().positive().default(64),
    epochs: z.number().int().positive().default(4),
    /**
     * 'fresh': new training seeds every epoch (the generator is infinite; docs/sft.md measured that
     * re-reading a fixed set overfits); 'fixed': the same episodes every epoch.
     */
    data: z.enum(['fresh', 'fixed']).default('fresh'),
    /**
     * Per task family: shares of episodes generated with extra knobs on top of env.knobs (e.g. short
     * kv-ledger streams). The answer lookup is one token per long episode; short episodes teach
     * it at a fraction of the tokens (docs/sft.md). Families without an entry use env.knobs only.
     */
    mix: z
      .record(
        z.string(),
        z
          .array(z.object({ share: z.number().min(0).max(1), knobs: z.record(z.string(), z.unknown()) }).strict())
          .refine((xs) => xs.reduce((a, m) => a + m.share, 0) <= 1, { message: 'shares must sum to at most 1' }),
      )
      .default({}),
    /** lossy(p) summaries: each needed fact dropped with probability p (docs/tasks.md). */
    lossyP: z.number().min(0).max(1).default(0.3),
    /** lossy summaries drop each goal clause (the task statement) with this probability; unset: lossyP / 2. */
    lossyGoalP: z.number().min(0).max(1).optional(),
    /**
     * The demonstrator slips (src/env/slip.ts): its final decision goes wrong with this probability
     * (a wrong value in the answer, `done` before the drop), so the base does too, also on tasks
     * that fit one window (docs/decisions/0028-demonstrator-slips.md). Held-out accuracy is
     * measured against the expert without slips. Families without a slip ignore it.
     */
    slipP: z.number().min(0).max(1).default(0),
    /** Peak learning rate, reached after warmupSteps, then a cosine to lr * minLrRatio at the last step. */
    lr: z.number().positive().default(1e-3),
    warmupSteps: z.number().int().nonnegative().default(20),
    minLrRatio: z.number().min(0).max(1).default(0.1),
    batchTokens: z.number().int().positive().default(2048),
    /** Dense warm-up before the episode SFT (dense-warmup.ts); off unless steps > 0. */
    dense: DenseWarmupSchema.prefault({}),
    /** Expert episodes on evaluation seeds for held-out token accuracy by kind; 0 skips it. */
    heldOutEpisodes: z.number().int().nonnegative().default(16),
    seed: z.number().int().nonnegative().default(0),
    /**
     * Write TensorBoard event files to the run directory: each epoch's metrics, its wall-clock
     * seconds (`perf/epoch_s`) and one expert episode it trained on (docs/tensorboard.md). Absent:
     * on (`crl sft --no-tensorboard`: false).
     */
    tensorboard: z.boolean().optional(),
    /**
     * Expert episodes that end in a fault (a sandbox that did not start) run again, then are left
     * out; more than maxFraction of an epoch left out stops the run (docs/faults.md). Absent:
     * FaultPolicySchema's defaults (absent rather than defaulted, so stored configs still match).
     */
    faults: FaultPolicySchema.optional(),
  })
  .strict();
export type SftConfig = z.infer<typeof SftConfigSchema>;
export type SftConfigInput = z.input<typeof SftConfigSchema>;
