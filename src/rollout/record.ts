import { z } from 'zod';
import { FAULT_KINDS } from '../contracts/index.ts';

/**
 * One episode's record (method §3): every segment's tokens exactly as fed to the sampler,
 * its loss mask and sampling logprobs, and one event per compaction. Written as JSONL.
 */

export const SegmentSchema = z
  .object({
    kind: z.enum(['execution', 'summary']),
    /** Position in the episode: exec_1 = 0, sum_1 = 1, exec_2 = 2, ... */
    index: z.number().int().min(0),
    /** Policy version that sampled this segment's first generated token. */
    policyVersion: z.number().int(),
    tokens: z.array(z.number().int().min(0)), // [T]
    lossMask: z.array(z.union([z.literal(0), z.literal(1)])), // [T]: 1 on generated tokens of this segment
    /** [T]: log pi(token) as sampled, aligned with tokens; null where not generated or unknown. */
    logprobs: z.array(z.number().nullable()),
  })
  .strict()
  .refine((s) => s.lossMask.length === s.tokens.length && s.logprobs.length === s.tokens.length, {
    message: 'tokens, lossMask and logprobs must have the same length',
  });
export type Segment = z.infer<typeof SegmentSchema>;

export const CompactionEventSchema = z
  .object({
    kind: z.literal('compaction'),
    /** 1-based compaction number. */
    compaction: z.number().int().min(1),
    /** Steps taken in the episode when compaction started. */
    afterStep: z.number().int().min(0),
    windowTokensBefore: z.number().int().min(0),
    windowTokensAfter: z.number().int().min(0),
    summaryTokens: z.number().int().min(0),
    tailStepsKept: z.number().int().min(0),
    tailStepsDropped: z.number().int().min(0),
  })
  .strict();

export const ObservationCutEventSchema = z
  .object({
    kind: z.literal('observation-cut'),
    /** 1-based step whose observation was cut. */
    step: z.number().int().min(1),
    originalTokens: z.number().int().min(0),
    keptTokens: z.number().int().min(0),
  })
  .strict();

/**
 * The environment failed (threw, timed out, or its sandbox broke), or the engine failed while the
 * episode waited for tokens (during 'sample', fault 'engine'). During reset, step or sample this
 * ends the episode with outcome 'env-error' (a fault: not the agent's doing, never trained on,
 * docs/faults.md); a failed close is recorded and changes nothing.
 */
export const EnvErrorEventSchema = z
  .object({
    kind: z.literal('env-error'),
    /** 'job': a rollout queue gave the episode's job up after its attempts; no episode came back (docs/faults.md). */
    during: z.enum(['reset', 'step', 'sample', 'close', 'job']),
    /** Steps taken when it happened (0 during reset). */
    step: z.number().int().min(0),
    /** 'timeout' when the runtime's per-call limit passed, 'error' when the call threw or rejected. */
    cause: z.enum(['timeout', 'error']),
    /** Whose fault (contracts/fault.ts); absent in older records: 'environment'. */
    fault: z.enum(FAULT_KINDS).optional(),
    message: z.string(),
  })
  .strict();

/**
 * One generated turn in the tools format (docs/agent-format.md): where it lies in its segment, how
 * many of its tokens are reasoning, and, for an execution turn, whether it was one well-formed call
 * of a declared tool (the cause when not) and the token span of the call.
 */
export const TurnRecordSchema = z
  .object({
    stage: z.enum(['act', 'summarize']),
    /** The segment holding the turn's tokens (its index in segments). */
    segment: z.number().int().min(0),
    /** Token offsets [start, end) of the generated turn in that segment, its stop id included. */
    start: z.number().int().min(0),
    end: z.number().int().min(0),
    /** Tokens of the thinking block (`<think>` to `</think>` and the newlines after it). */
    reasoningTokens: z.number().int().min(0),
    /** Execution turns: the call parsed, or why not (TOOL_CALL_CAUSES), and its token span in the segment. */
    call: z
      .object({
        parsed: z.boolean(),
        cause: z.string().optional(),
        name: z.string().optional(),
        span: z.tuple([z.number().int().min(0), z.number().int().min(0)]).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type TurnRecord = z.infer<typeof TurnRecordSchema>;

export const EpisodeEventSchema = z.discriminatedUnion('kind', [
  CompactionEventSchema,
  ObservationCutEventSchema,
  EnvErrorEventSchema,
]);
export type EpisodeEvent = z.infer<typeof EpisodeEventSchema>;
export type CompactionEvent = z.infer<typeof CompactionEventSchema>;
export type EnvErrorEvent = z.infer<typeof EnvErrorEventSchema>;

/**
 * The agent's outcomes (success, failure, truncated, step-limit) and the one fault: 'env-error',
 * the environment failed during reset or a step (an EnvErrorEvent says why and whose fault).
 * A fault has reward 0 in the record; training leaves it out and evaluation counts it as a
 * failure, reported apart (docs/faults.md).
 */
export const OUTCOMES = ['success', 'failure', 'truncated', 'step-limit', 'env-error'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const EpisodeRecordSchema = z
  .object({
    episodeId: z.string(),
    env: z.string(),
    /** Whose token ids the segments hold: 'word', 'qwen3' or a tokenizer directory (absent in older records: word). */
    tokenizer: z.string().optional(),
    seed: z.number().int(),
    /** The task's verified outcome; 0 when truncated or step-limited (method §2). Shared by all segments. */
    reward: z.number(),
    outcome: z.enum(OUTCOMES),
    compactions: z.number().int().min(0),
    contextWindow: z.number().int().min(1),
    maxWindows: z.number().int().min(1),
    steps: z.number().int().min(0),
    /** Sum of loss-mask ones over all segments. */
    generatedTokens: z.number().int().min(0),
    segments: z.array(SegmentSchema),
    events: z.array(EpisodeEventSchema),
    /** 'tools' when the agent acted through tool calls (absent: the text format). */
    agentFormat: z.enum(['text', 'tools']).optional(),
    /** Thinking on or off in the tools format. */
    thinking: z.boolean().optional(),
    /** Every generated turn, in order, in the tools format. */
    turns: z.array(TurnRecordSchema).optional(),
  })
  .strict();
export type EpisodeRecord = z.infer<typeof EpisodeRecordSchema>;

/** Success means the task passed: a reward of 1 (a graded partial score is not a pass). */
export function isSuccess(reward: number): boolean {
  return reward >= 1;
}

/** A segment as typed arrays, for the trainer. NaN marks a null logprob. */
export function segmentArrays(segment: Segment): {
  tokens: Int32Array; // [T]
  lossMask: Uint8Array; // [T]
  logprobs: Float32Array; // [T]
} {
  return {
    tokens: Int32Array.from(segment.tokens),
    lossMask: Uint8Array.from(segment.lossMask),
    logprobs: Float32Array.from(segment.logprobs, (x) => (x === null ? Number.NaN : x)),
  };
}

/** One JSON line per record (validated on the way out too: a bad record is a runtime bug). */
export function recordsToJsonl(records: readonly EpisodeRecord[]): string {
  return records.map((r) => JSON.stringify(EpisodeRecordSchema.parse(r)) + '\n').join('');
}

/** Raised for a JSONL line that is not a valid episode record; names the line. */
export class RecordParseError extends Error {
  constructor(
    readonly line: number,
    detail: string,
  ) {
    super(`episode record on line ${line} is invalid: ${detail}`);
    this.name = 'RecordParseError';
  }
}

export function parseRecordsJsonl(text: string): EpisodeRecord[] {
  const out: EpisodeRecord[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (e) {
      throw new RecordParseError(i + 1, (e as Error).message);
    }
    const r = EpisodeRecordSchema.safeParse(json);
    if (!r.success) {
      throw new RecordParseError(i + 1, r.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; '));
    }
    out.push(r.data);
  });
  return out;
}
