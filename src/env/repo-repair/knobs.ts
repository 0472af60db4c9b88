import { z } from 'zod';
import { BUG_KINDS } from './body.ts';

/**
 * repo-repair difficulty knobs (docs/tasks.md). The package has `modules` modules besides its
 * helper module; each holds minFunctions..maxFunctions functions (drawn per module), and the bug
 * sits in one function of one module at a random place, so the lines the agent reads before it
 * finds the bug (and with them the windows an episode needs) vary per seed.
 */
export const repoRepairKnobs = z
  .object({
    modules: z.number().int().min(1).max(6).default(3),
    minFunctions: z.number().int().min(1).max(12).default(2),
    maxFunctions: z.number().int().min(1).max(12).default(10),
    /** The kinds of bug planted (one per task, drawn from these). */
    bugKinds: z
      .array(z.enum(BUG_KINDS))
      .min(1)
      .default([...BUG_KINDS]),
  })
  .strict()
  .refine((k) => k.minFunctions <= k.maxFunctions, { message: 'minFunctions must be <= maxFunctions' });

export type RepoRepairKnobs = z.infer<typeof repoRepairKnobs>;

/** Held-out knob combinations, never used in training (method §8). */
export const repoRepairVariants: Record<string, Partial<RepoRepairKnobs>> = {
  'long-modules': { minFunctions: 11, maxFunctions: 12 },
  'branch-bugs': { bugKinds: ['branch'] },
};
