import { z } from 'zod';
import { EpisodeJobSchema } from '../rollout/episode-job.ts';

/**
 * What one queue job carries (docs/distributed.md): the episode as a job description
 * (rollout/episode-job.ts) plus everything a worker needs to run it the way the trainer would
 * have, in this process: the tokenizer (by name, checked by its sha256), the rollout settings,
 * which sampler acts and the step delay. Plain JSON, parsed with zod on the worker's side.
 */
export const EpisodeMessageSchema = z
  .object({
    /** The run the job belongs to (its directory, hashed): workers may serve several runs. */
    run: z.string().min(1),
    /** One trainer process of that run: a resumed trainer ignores the jobs of the one before. */
    session: z.string().min(1),
    job: EpisodeJobSchema,
    tokenizer: z.object({ name: z.string().min(1), sha256: z.string().min(1) }).strict(),
    /** The run's rollout settings (config.rollout), resolved against the tokenizer where the episode runs. */
    rollout: z.unknown(),
    sampler: z.discriminatedUnion('kind', [
      z
        .object({
          kind: z.literal('engines'),
          /** The engine replicas (`crl serve` or SGLang) the episode samples on. */
          urls: z.array(z.string().min(1)).min(1),
          protocol: z.enum(['sglang']),
          /** Only replicas serving these weights may sample (SGLang's weight_version). */
          weightVersion: z.string().min(1),
          /**
           * These weights or any newer ones (an asynchronous trainer, docs/async.md: it pushes newer
           * weights while the job waits); weightVersion is then the job's policyVersion, the floor.
           */
          orNewer: z.literal(true).optional(),
        })
        .strict(),
      /** The family's scripted expert (plumbing runs; the policy learns nothing useful from it). */
      z.object({ kind: z.literal('expert') }).strict(),
    ]),
    /** Every environment step waits this long first (ms). */
    stepDelayMs: z.number().int().nonnegative().default(0),
    /**
     * HMAC-SHA256 of every other field with the trainer's CRL_QUEUE_SECRET (src/queue/job-signature.ts),
     * hex; absent when the trainer has no secret.
     */
    signature: z.string().min(1).optional(),
  })
  .strict();

export type EpisodeMessage = z.infer<typeof EpisodeMessageSchema>;
export type EpisodeMessageInput = z.input<typeof EpisodeMessageSchema>;

/** BullMQ job ids may not contain ':' (its key separator); ids stay readable in redis-cli. */
export function episodeJobId(message: Pick<EpisodeMessage, 'run' | 'session' | 'job'>): string {
  return `${message.run}.${message.session}.${message.job.episodeId}`.replaceAll(':', '_');
}
