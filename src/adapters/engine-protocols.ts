import { z } from 'zod';
import type { SampleRequest, SampleResult, SamplingParams } from '../contracts/index.ts';
import { requestSeed } from '../util/random.ts';

/**
 * Token-in / token-out wire formats of remote inference engines (method §3: the runtime never
 * re-tokenizes, so a remote engine must take prompt token ids and return generated token ids).
 * Both are subsets of the engines' own HTTP APIs:
 * - `vllm`: OpenAI-style `POST /v1/completions` with `prompt` as a list of token ids, logprobs with
 *   `return_tokens_as_token_ids` (tokens come back as `token_id:N`), `stop_token_ids`, and the
 *   request's own `seed` when it has one.
 * - `sglang`: native `POST /generate` with `input_ids`, `return_logprob`, and
 *   `meta_info.output_token_logprobs` as `[logprob, token_id, text]` triples; `no_stop_trim` keeps
 *   the stop token in the output; `sampling_params.sampling_seed` carries the request's seed.
 * The client (http-sampler.ts) builds requests and parses responses. `crl serve`
 * (src/serve/) answers /generate with the SGLang schemas here, and /v1/completions with the
 * whole OpenAI completions API (src/serve/openai-completions.ts), so the client's tests run against
 * a real server process.
 */
export type EngineProtocolName = 'vllm' | 'sglang';

/** What one protocol needs, both directions. */
export interface EngineProtocol {
  path: string;
  /**
   * Client: the HTTP body for one request. `adapter`: a LoRA adapter the engine has loaded
   * (engine-lora.ts) answers it: vLLM's `model`, SGLang's `lora_path`.
   */
  requestBody(o: { request: SampleRequest; params: SamplingParams; model?: string; adapter?: string }): unknown;
  /** Client: the engine's JSON answer -> a SampleResult (throws a message on a malformed one). */
  parseResponse(json: unknown, request: SampleRequest): SampleResult;
  /**
   * Server (SGLang only): an HTTP body -> the request, its sampling params and the LoRA adapter it
   * names (`lora_path`, absent: the base), zod errors naming the field.
   */
  parseRequest?(json: unknown): { request: SampleRequest; params: SamplingParams; adapter?: string };
  /**
   * Server (SGLang only): a SampleResult -> the engine's JSON answer. `text` is the sampled tokens
   * decoded by the server's tokenizer (SGLang returns it; absent: "", for a server without one).
   */
  responseBody?(o: { result: SampleResult; model: string; promptTokens: number; text?: string }): unknown;
}

const TokenIds = z.array(z.number().int().nonnegative());

const VllmResponse = z.object({
  choices: z
    .array(
      z.object({
        logprobs: z.object({ tokens: z.array(z.string()), token_logprobs: z.array(z.number().nullable()) }),
        finish_reason: z.string().nullable(),
        stop_reason: z.union([z.number(), z.string()]).nullable().optional(),
      }),
    )
    .min(1),
});

const SglangRequest = z.object({
  input_ids: TokenIds.min(1),
  /** SGLang names a loaded adapter here (one request: one name). */
  lora_path: z.string().min(1).nullish(),
  sampling_params: z.object({
    max_new_tokens: z.number().int().nonnegative(),
    temperature: z.number().min(0).default(1),
    top_p: z.number().gt(0).max(1).default(1),
    stop_token_ids: TokenIds.default([]),
    sampling_seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullish(),
  }),
});

const SglangResponse = z.object({
  meta_info: z.object({
    output_token_logprobs: z.array(z.tuple([z.number().nullable(), z.number().int()]).rest(z.unknown())),
    finish_reason: z
      .object({ type: z.string(), matched: z.union([z.number(), z.string()]).nullable().optional() })
      .nullable(),
    /** The weights that answered (SGLang since its weight-version API; absent in older servers). */
    weight_version: z.string().optional(),
  }),
});

/** `token_id:N` (vLLM's return_tokens_as_token_ids form) -> N. */
function tokenIdOf(s: string): number {
  const m = /^token_id:(\d+)$/.exec(s);
  if (!m) throw new Error(`expected a token as "token_id:N" (return_tokens_as_token_ids), got ${JSON.stringify(s)}`);
  return Number(m[1]);
}

/**
 * A stop token the engine reported as the reason but left out of the tokens: put it back (the
 * runtime counts the stop token as generated, method §3); its logprob is unknown.
 */
function withStopToken(r: SampleResult, matched: unknown, request: SampleRequest): SampleResult {
  const last = r.tokens[r.tokens.length - 1];
  if (
    r.finishReason === 'stop' &&
    typeof matched === 'number' &&
    request.stopTokens.includes(matched) &&
    last !== matched
  ) {
    return { ...r, tokens: [...r.tokens, matched], logprobs: [...r.logprobs, null] };
  }
  return r;
}

function parseWith<T>(schema: z.ZodType<T>, json: unknown, what: string): T {
  const r = schema.safeParse(json);
  if (!r.success)
    throw new Error(
      `${what}: ${r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`,
    );
  return r.data;
}

const vllm: EngineProtocol = {
  path: '/v1/completions',
  requestBody: ({ request, params, model, adapter }) => ({
    // Absent: the server's base model (vLLM rejects unknown names); an adapter is a model by its name.
    ...((adapter ?? model) === undefined ? {} : { model: adapter ?? model }),
    prompt: request.prompt,
    max_tokens: request.maxTokens,
    temperature: params.temperature,
    top_p: params.topP,
    stop_token_ids: request.stopTokens,
    logprobs: 0, // the sampled token's logprob only (no top-k to compute)
    return_tokens_as_token_ids: true,
    skip_special_tokens: false,
    ...(request.seed === undefined ? {} : { seed: request.seed }),
  }),
  parseResponse(json, request) {
    const c = parseWith(VllmResponse, json, 'vllm /v1/completions response').choices[0]!;
    const r: SampleResult = {
      tokens: c.logprobs.tokens.map(tokenIdOf),
      logprobs: c.logprobs.token_logprobs,
      finishReason: c.finish_reason === 'stop' ? 'stop' : 'length',
    };
    return withStopToken(r, c.stop_reason, request);
  },
};

const sglang: EngineProtocol = {
  path: '/generate',
  requestBody: ({ request, params, adapter }) => ({
    input_ids: request.prompt,
    ...(adapter === undefined ? {} : { lora_path: adapter }),
    return_logprob: true,
    sampling_params: {
      max_new_tokens: request.maxTokens,
      temperature: params.temperature,
      top_p: params.topP,
      stop_token_ids: request.stopTokens,
      skip_special_tokens: false,
      no_stop_trim: true,
      ...(request.seed === undefined ? {} : { sampling_seed: request.seed }),
    },
  }),
  parseResponse(json, request) {
    const m = parseWith(SglangResponse, json, 'sglang /generate response').meta_info;
    const r: SampleResult = {
      tokens: m.output_token_logprobs.map((x) => x[1]),
      logprobs: m.output_token_logprobs.map((x) => x[0]),
      finishReason: m.finish_reason?.type === 'stop' ? 'stop' : 'length',
      ...(m.weight_version !== undefined ? { weightVersion: m.weight_version } : {}),
    };
    return withStopToken(r, m.finish_reason?.matched, request);
  },
  parseRequest(json) {
    const b = parseWith(SglangRequest, json, 'request');
    const s = b.sampling_params;
    return {
      request: {
        prompt: b.input_ids,
        maxTokens: s.max_new_tokens,
        stopTokens: s.stop_token_ids,
        ...(s.sampling_seed == null ? {} : { seed: s.sampling_seed }),
      },
      params: { temperature: s.temperature, topP: s.top_p },
      ...(b.lora_path == null ? {} : { adapter: b.lora_path }),
    };
  },
  responseBody: ({ result, promptTokens, text }) => ({
    text: text ?? '',
    output_ids: result.tokens,
    meta_info: {
      prompt_tokens: promptTokens,
      completion_tokens: result.tokens.length,
      output_token_logprobs: result.tokens.map((t, i) => [result.logprobs[i] ?? null, t, null]),
      finish_reason:
        result.finishReason === 'stop'
          ? { type: 'stop', matched: result.tokens[result.tokens.length - 1] }
          : { type: 'length', length: result.tokens.length },
      ...(result.weightVersion !== undefined ? { weight_version: result.weightVersion } : {}),
    },
  }),
};

/** The request with its own seed (SampleRequest.seed) when the sampler has a seed and the request an episode. */
export function withRequestSeed(seed: number | undefined, request: SampleRequest): SampleRequest {
  const own = seed === undefined || request.seed !== undefined ? undefined : requestSeed(seed, request);
  return own === undefined ? request : { ...request, seed: own };
}

/** Protocols by name (a registry: an unknown name lists the valid ones). */
export const ENGINE_PROTOCOLS: Readonly<Record<EngineProtocolName, EngineProtocol>> = { vllm, sglang };

export function engineProtocol(name: string): EngineProtocol {
  const p = (ENGINE_PROTOCOLS as Record<string, EngineProtocol | undefined>)[name];
  if (!p)
    throw new Error(
      `unknown engine protocol ${JSON.stringify(name)}; valid: ${Object.keys(ENGINE_PROTOCOLS).join(', ')}`,
    );
  return p;
}
