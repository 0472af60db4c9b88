import { z } from 'zod';

/**
 * The body of `POST /v1/completions` (openai-completions.ts): the fields of vLLM's
 * CompletionRequest this server honours, and those it refuses unless they hold their no-op value.
 */
const MAX_LOGPROBS = 20; // vLLM's default max_logprobs

const TokenIds = z.array(z.number().int().nonnegative());
export const CompletionRequest = z
  .object({
    model: z.string().nullish(),
    prompt: z.union([
      z.string().min(1),
      z.array(z.string().min(1)).min(1),
      TokenIds.min(1),
      z.array(TokenIds.min(1)).min(1),
    ]),
    max_tokens: z.number().int().nonnegative().nullish(),
    temperature: z.number().min(0).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    n: z.number().int().min(1).nullish(),
    logprobs: z
      .number()
      .int()
      .min(0)
      .max(MAX_LOGPROBS, { error: `at most ${MAX_LOGPROBS}` })
      .nullish(),
    echo: z.boolean().nullish(),
    stop: z.union([z.string(), z.array(z.string())]).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
    stop_token_ids: TokenIds.nullish(),
    include_stop_str_in_output: z.boolean().nullish(),
    return_tokens_as_token_ids: z.boolean().nullish(),
    return_token_ids: z.boolean().nullish(),
    skip_special_tokens: z.boolean().nullish(),
    user: z.string().nullish(),
    seed: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).nullish(),
  })
  .loose();
export type CompletionRequestBody = z.infer<typeof CompletionRequest>;

/** Fields vLLM supports that this server does not: refused unless they hold their no-op value. */
export const UNSUPPORTED: Readonly<Record<string, (v: unknown) => boolean>> = {
  suffix: (v) => v == null || v === '',
  best_of: (v) => v == null || v === 1,
  frequency_penalty: (v) => v == null || v === 0,
  presence_penalty: (v) => v == null || v === 0,
  repetition_penalty: (v) => v == null || v === 1,
  logit_bias: (v) => v == null || (typeof v === 'object' && Object.keys(v).length === 0),
  use_beam_search: (v) => v == null || v === false,
  top_k: (v) => v == null || v === 0 || v === -1,
  min_p: (v) => v == null || v === 0,
  min_tokens: (v) => v == null || v === 0,
  ignore_eos: (v) => v == null || v === false,
  prompt_logprobs: (v) => v == null,
  logprob_token_ids: (v) => v == null,
  allowed_token_ids: (v) => v == null,
  bad_words: (v) => v == null || (Array.isArray(v) && v.length === 0),
  response_format: (v) => v == null,
  structured_outputs: (v) => v == null,
  prompt_embeds: (v) => v == null,
};
