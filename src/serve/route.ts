import type { ServerResponse } from 'node:http';
import type { PositionLogprobs, ScoreSampling } from '../model/sampler/top-logprobs.ts';
import type { SampleRequest, SampleResult, SamplingParams, Tokenizer } from '../contracts/index.ts';
import type { ChatTemplateSource } from '../rollout/chat-format.ts';
import { send } from './http-errors.ts';
import { HttpError } from './http-guard.ts';

/**
 * One endpoint of `crl serve`. A POST route's handler gets the parsed JSON body, read within the
 * server's limits before the request takes a serving slot (request-slots.ts); a GET route none.
 */
export interface Route {
  post: boolean;
  /**
   * Behind the admin token, with the admin body limit (the weight update answers its errors in
   * SGLang's `{ success, message }` shape, the LoRA routes in vLLM's OpenAI shape).
   */
  admin?: boolean;
  handle(res: ServerResponse, body: unknown): Promise<void> | void;
}

/**
 * What the sampling routes share: the served model and the batching queue. A request names the
 * base by its name (or no name), or a loaded LoRA adapter by its name (`adapter` below).
 */
export interface SamplingContext {
  model: string;
  /** The loaded LoRA adapters (lora-adapters.ts); absent: the base only. */
  adapters?: { has(name: string): boolean };
  tokenizer: Tokenizer;
  vocabSize: number;
  /** The model's maxSeqLen: prompt + max_tokens may not exceed it. */
  maxModelLen: number;
  /** The batcher; a sampler error comes back as a 400. */
  sample: (requests: readonly SampleRequest[], params: SamplingParams, adapter?: string) => Promise<SampleResult[]>;
  /** Top-k teacher-forced log-probs (the embedded model), for logprobs > 0 and echo. */
  score?: (
    seq: readonly number[],
    from: number,
    k: number,
    sampling?: ScoreSampling,
    adapter?: string,
  ) => PositionLogprobs[];
  /** The tokenizer's chat template, for /v1/chat/completions (absent: no chat route). */
  chat?: ChatTemplateSource;
}

/** `GET /health`: the process is up and answering. */
export const healthRoutes: Record<string, Route> = {
  'GET /health': { post: false, handle: (res) => send(res, 200, { status: 'ok' }) },
};

/**
 * SGLang's weight-version reads: `GET /get_weight_version` and `GET /model_info` (which newer
 * SGLang answers with the version too), so a rollout client can check which weights a replica
 * serves before it routes an episode there.
 */
export function weightVersionRoutes(o: { model: string; weightVersion: () => string }): Record<string, Route> {
  return {
    'GET /get_weight_version': { post: false, handle: (res) => send(res, 200, { weight_version: o.weightVersion() }) },
    'GET /model_info': {
      post: false,
      handle: (res) =>
        send(res, 200, {
          model_path: o.model,
          tokenizer_path: null,
          is_generation: true,
          weight_version: o.weightVersion(),
        }),
    },
  };
}

/**
 * The adapter a request's `model` names: undefined for the base (its name, or none, as vLLM
 * takes an empty one), the name of a loaded adapter, else vLLM's 404.
 */
export function adapterNamed(
  o: { model: string; adapters?: { has(name: string): boolean } },
  name: string | null | undefined,
): string | undefined {
  if (!name || name === o.model) return undefined;
  if (o.adapters?.has(name)) return name;
  throw new HttpError(404, `The model \`${name}\` does not exist.`);
}
