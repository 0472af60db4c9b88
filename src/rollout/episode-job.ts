import { z } from 'zod';
import { EnvSpecSchema, type Environment, type EnvSpec } from '../contracts/index.ts';
import type { EpisodeSpec } from './episode.ts';

/**
 * One episode as a job description: everything needed to run it elsewhere except the samplers
 * and the rollout settings of its batch. Plain data (it survives JSON), parsed with zod where it
 * arrives; the environment is built from `env` only where the episode runs.
 */
export const EpisodeJobSchema = z
  .object({
    /** Unique within a run: records are accepted once per id. */
    episodeId: z.string().min(1),
    env: EnvSpecSchema,
    /** The task seed the environment is reset with. */
    seed: z.number().int(),
    /** The policy version that should sample it (weights after this many updates). */
    policyVersion: z.number().int().min(0),
  })
  .strict();

export type EpisodeJob = z.infer<typeof EpisodeJobSchema>;

/** The runner's episode for a job: its environment built by `create` (src/env/create-environment.ts). */
export function episodeOfJob(job: EpisodeJob, create: (spec: EnvSpec) => Environment): EpisodeSpec {
  return { episodeId: job.episodeId, env: create(job.env), seed: job.seed };
}
