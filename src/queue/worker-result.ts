import { z } from 'zod';

/**
 * What a worker returns for a job: the episode's record (parsed with EpisodeRecordSchema on the
 * trainer's side) and how long the episode itself ran, so the trainer can tell the queue's own
 * latency from the episode's. Signed when the worker has a secret, so a queue writer without it
 * cannot hand the trainer records of its own making.
 */
export const WorkerResultSchema = z
  .object({
    record: z.unknown(),
    /** Wall time of the episode inside the worker (ms). */
    runMs: z.number().nonnegative(),
    /** HMAC-SHA256 of the job id, record and runMs with the worker's CRL_QUEUE_SECRET (src/queue/job-signature.ts); absent without one. */
    signature: z.string().min(1).optional(),
  })
  .strict();

export type WorkerResult = z.infer<typeof WorkerResultSchema>;
