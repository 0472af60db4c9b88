import { z } from 'zod';

/**
 * The JSON API between `crl view`'s server and its web app. One module, imported by both sides:
 * the server validates every response before sending it, the browser parses every response it
 * receives (house style: zod at every boundary). Zod only: this file is bundled into the web app.
 */

const num = z.number();

export const EvalRowSchema = z
  .object({
    system: z.string(),
    env: z.string(),
    variant: z.string(),
    summaryWriter: z.string(),
    contextWindow: z.number().int(),
    /** Keyed 'x1', 'x4', ...: Pass@1 with its 95% interval (fractions). */
    modes: z.record(z.string(), z.object({ passAt1: num, low: num, high: num, samples: z.number().int() }).strict()),
  })
  .strict();
export type EvalRow = z.infer<typeof EvalRowSchema>;

export const SourceSchema = z
  .object({
    id: z.number().int().min(0),
    /** 'run': a training run directory; 'records': an episode JSONL file (crl run --out). */
    kind: z.enum(['run', 'records']),
    label: z.string(),
    /** What legends and pickers call it: system and seed (src/view/legend-names.ts). */
    name: z.string(),
    /** The given directory or file it came from (a pipeline's runs share one), for picking them together. */
    group: z.string(),
    system: z.string().nullable(),
    seed: z.number().int().nullable(),
    /** Task family of the run's config (or of the records), when known. */
    env: z.string().nullable(),
    /** Iterations with saved episodes, ascending; a records file has one group, iteration 0. */
    iterations: z.array(z.number().int().min(0)),
    hasMetrics: z.boolean(),
    /** Changes whenever the run's curves do (a run still training): the client refetches them then. */
    version: z.string(),
    /** Link to the run's static HTML report (served under /files/), when it has one. */
    reportHref: z.string().nullable(),
  })
  .strict();
export type Source = z.infer<typeof SourceSchema>;

export const SourcesResponseSchema = z
  .object({ sources: z.array(SourceSchema), evals: z.array(EvalRowSchema), warnings: z.array(z.string()) })
  .strict();
export type SourcesResponse = z.infer<typeof SourcesResponseSchema>;

/** Training curves of one run: metric name -> [iteration, value] pairs, iterations ascending. */
export const MetricsResponseSchema = z
  .object({ source: z.number().int(), series: z.record(z.string(), z.array(z.tuple([num, num]))) })
  .strict();
export type MetricsResponse = z.infer<typeof MetricsResponseSchema>;

export const EpisodeBriefSchema = z
  .object({
    index: z.number().int().min(0),
    episodeId: z.string(),
    env: z.string(),
    seed: z.number().int(),
    outcome: z.string(),
    reward: num,
    compactions: z.number().int(),
    steps: z.number().int(),
    generatedTokens: z.number().int(),
    /** Segment kinds and lengths, for the list's small time line. */
    segments: z.array(z.object({ kind: z.enum(['execution', 'summary']), tokens: z.number().int() }).strict()),
    hasCredit: z.boolean(),
  })
  .strict();
export type EpisodeBrief = z.infer<typeof EpisodeBriefSchema>;

export const EpisodeListResponseSchema = z
  .object({ source: z.number().int(), iteration: z.number().int(), episodes: z.array(EpisodeBriefSchema) })
  .strict();
export type EpisodeListResponse = z.infer<typeof EpisodeListResponseSchema>;

/** Chat roles by token (null where the tokenizer has no single-token turn markers). */
export const ROLES = ['system', 'user', 'assistant', 'observation', 'marker'] as const;

/** Per generated token of one segment (loss mask 1, in order), from the training update (method §4–6). */
export const CreditArraysSchema = z
  .object({
    inPolicyLoss: z.boolean(),
    advantage: z.array(num),
    used: z.array(num).nullable(),
    return: z.array(num),
    value: z.array(num).nullable(),
    oldLogprob: z.array(num),
    entropy: z.array(num),
    ratio: z.array(num),
  })
  .strict();
export type CreditArrays = z.infer<typeof CreditArraysSchema>;

export const SegmentViewSchema = z
  .object({
    index: z.number().int(),
    kind: z.enum(['execution', 'summary']),
    policyVersion: z.number().int(),
    /** [T] each token's text; their concatenation is the segment's decoded text. */
    pieces: z.array(z.string()),
    /** [T] the loss mask (1: generated in this segment). */
    mask: z.array(z.union([z.literal(0), z.literal(1)])),
    /** [T] index into ROLES, or null. */
    roles: z
      .array(
        z
          .number()
          .int()
          .min(0)
          .max(ROLES.length - 1),
      )
      .nullable(),
    /**
     * A summary segment repeats the window it compressed: its first `windowTokens` tokens equal the
     * execution segment before it (method §3), so the view can fold them. 0 for execution segments.
     */
    windowTokens: z.number().int().min(0),
    /** Sampler log-probs of the generated tokens (null where a scripted policy acted). */
    samplerLogprob: z.array(num.nullable()),
    credit: CreditArraysSchema.nullable(),
  })
  .strict();
export type SegmentView = z.infer<typeof SegmentViewSchema>;

export const FactMarkSchema = z
  .object({ kind: z.enum(['goal', 'fact', 'meta']), clause: z.string(), kept: z.boolean() })
  .strict();

export const SummaryViewSchema = z
  .object({
    /** The summary segment and the execution segment whose window it compressed. */
    segment: z.number().int(),
    window: z.number().int(),
    compaction: z.number().int().min(1),
    /** The summary S as decoded by the run's tokenizer (its final end-of-turn token left out). */
    text: z.string(),
    /** What the family's oracle writer would have kept here, when the family knows (method §7 Table 1). */
    oracle: z.string().nullable(),
    facts: z.array(FactMarkSchema).nullable(),
    tailStepsKept: z.number().int().nullable(),
    tailStepsDropped: z.number().int().nullable(),
  })
  .strict();
export type SummaryView = z.infer<typeof SummaryViewSchema>;

export const EpisodeViewSchema = z
  .object({
    source: z.number().int(),
    iteration: z.number().int(),
    index: z.number().int(),
    episodeId: z.string(),
    env: z.string(),
    seed: z.number().int(),
    outcome: z.string(),
    reward: num,
    compactions: z.number().int(),
    steps: z.number().int(),
    generatedTokens: z.number().int(),
    contextWindow: z.number().int(),
    maxWindows: z.number().int(),
    tokenizer: z.string(),
    segments: z.array(SegmentViewSchema),
    summaries: z.array(SummaryViewSchema),
    credit: z.object({ whitened: z.boolean(), policyUpdated: z.boolean() }).strict().nullable(),
  })
  .strict();
export type EpisodeView = z.infer<typeof EpisodeViewSchema>;

export const ErrorResponseSchema = z.object({ error: z.string() }).strict();
