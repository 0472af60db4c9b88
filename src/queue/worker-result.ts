import { z } from 'zod';

/**
 * What a worker returns for a job: the episode's record (parsed with EpisodeRecordSchema on the
 * trainer's side) and how long the episode itself ran, so the trainer can tell the queue's own
 * latency from the episode's.
 */
export const WorkerResultSchema = z
  .object({
    record: z.unknown(),
    /** Wall time of the episode inside the worker (ms). */
    runMs: z.number().nonnegative(),
  })
  .strict();

export type WorkerResult = z.infer<typeof WorkerResultSchema>;
