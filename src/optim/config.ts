import { z } from 'zod';

/** Optimizer and schedule settings, given when a policy or critic is created. */
export const OptimizerConfigSchema = z
  .object({
    lr: z.number().nonnegative(),
    betas: z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]),
    eps: z.number().positive(),
    weightDecay: z.number().nonnegative(),
    /** Global gradient-norm clip; 0 disables clipping. */
    gradClip: z.number().nonnegative(),
    warmupSteps: z.number().int().nonnegative(),
    totalSteps: z.number().int().positive(),
    /** The cosine decays to lr * minLrRatio at totalSteps and stays there. */
    minLrRatio: z.number().min(0).max(1),
  })
  .strict();

export type OptimizerConfig = z.infer<typeof OptimizerConfigSchema>;

export const DEFAULT_OPTIMIZER: OptimizerConfig = {
  lr: 3e-4,
  betas: [0.9, 0.95],
  eps: 1e-8,
  weightDecay: 0.01,
  gradClip: 1,
  warmupSteps: 10,
  totalSteps: 1000,
  minLrRatio: 0.1,
};

export function parseOptimizerConfig(raw: unknown): OptimizerConfig {
  const r = OptimizerConfigSchema.safeParse(raw);
  if (!r.success)
    throw new Error(
      `invalid optimizer config: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  return r.data;
}
