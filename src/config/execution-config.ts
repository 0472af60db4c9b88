import { z } from 'zod';
import { ENGINE_LOGPROBS } from './sampling-problems.ts';

/**
 * The sections of the training configuration (train-config.ts) that say where a run's work runs:
 * remote engines, the PyTorch trainer, the rollout queue. Each section as a whole is documented at
 * its key there.
 */

export const EngineSectionSchema = z
  .object({
    /**
     * One engine URL, or several replicas comma-separated (docs/distributed.md): each
     * episode sticks to one, new episodes go to the least-loaded, a replica that stops
     * answering is taken out and its requests retried on another.
     */
    url: z
      .string()
      .refine((s) => engineUrls(s).every((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol)), {
        message:
          'expected one or more http(s) URLs, comma-separated, e.g. http://127.0.0.1:30000,http://127.0.0.1:30001',
      }),
    protocol: z.enum(['sglang', 'vllm']).default('sglang'),
    /**
     * Sample on a replica that reports no weight version (an engine without SGLang's
     * get_weight_version). Off: such a replica's weights cannot be known to be the published ones.
     */
    acceptUnversioned: z.boolean().optional(),
    /**
     * Which distribution the engine's log-probs are of (docs/remote-engines.md): 'temperature'
     * (SGLang's default: softmax(z / T), top-p not applied), 'sampled' (the distribution each
     * token was drawn from, top-p included: `crl serve`), 'raw' (the model's own, temperature 1:
     * SGLang with SGLANG_RETURN_ORIGINAL_LOGPROB). The off-policy corrections divide by them,
     * so a correction is refused where they are not the sampled distribution's.
     */
    logprobs: z.enum(ENGINE_LOGPROBS).default('temperature'),
    /**
     * A LoRA run's push (docs/lora.md): 'on' = only the adapter at each policy version, through
     * vLLM's /v1/load_lora_adapter, with every request naming that version's adapter; 'off' =
     * the merged weights through update_weights_from_disk; absent or 'auto' = the adapter when
     * every engine takes the first one, else the merged weights. Adapters need the trainer's
     * own engine pool: with `queue` the merged weights are pushed.
     */
    lora: z.enum(['auto', 'on', 'off']).optional(),
  })
  .strict();

export const TrainerSectionSchema = z
  .object({
    kind: z.literal('torch'),
    /** The command that starts it, split on whitespace (default /usr/bin/python3 -m crl_torch). */
    command: z.string().min(1).optional(),
    /** Processes under torchrun, each training its share of every minibatch (default 1: no torchrun). */
    procs: z.number().int().min(1).max(1024).optional(),
    /** tcp://host:port of a trainer started separately (`python3 -m crl_torch --listen PORT`). */
    url: z
      .string()
      .refine((s) => URL.canParse(s) && new URL(s).protocol === 'tcp:' && new URL(s).port !== '', {
        message: 'expected tcp://HOST:PORT',
      })
      .optional(),
    /** Fail when one request gets no answer for this long (seconds). */
    timeoutSec: z.number().positive().default(600),
  })
  .strict()
  .refine(
    (t) =>
      [t.command, t.url, t.procs !== undefined && t.procs > 1 ? t.procs : undefined].filter((x) => x !== undefined)
        .length <= 1,
    {
      message:
        'give at most one of command, url and procs above 1 (--trainer-command, --trainer-url, --trainer-procs; a command may run torchrun itself)',
    },
  );

export const QueueSectionSchema = z
  .object({
    /** redis://host:port[/db] of the queue's Redis. */
    url: z.string().refine((s) => URL.canParse(s) && /^rediss?:$/.test(new URL(s).protocol), {
      message: 'expected a redis:// URL, e.g. redis://127.0.0.1:6379',
    }),
    /** The queue's name: workers listening on the same name take the jobs. */
    name: z.string().min(1).default('crl-episodes'),
    /** Fail the iteration when no job starts or finishes for this long (seconds). */
    timeoutSec: z.number().positive().default(60),
    /** Times a job runs before it counts as failed (a lost worker's stalled job counts too). */
    attempts: z.number().int().positive().default(3),
  })
  .strict();

/** `engine.url` as its replicas: comma-separated, blanks dropped. */
export function engineUrls(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
}
