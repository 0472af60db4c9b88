/**
 * The sampler contract: token ids in, token ids and log-probs out, in batches. The embedded
 * model, scripted text policies and remote engines (vLLM, SGLang, llama.cpp, `crl serve`) all
 * implement it.
 */

/** One prompt to continue. */
export interface SampleRequest {
  /** Token ids exactly as the policy sees them. */
  prompt: readonly number[];
  /** At most this many new tokens. */
  maxTokens: number;
  /** Generation stops after emitting any of these (the stop token is returned and counted). */
  stopTokens: readonly number[];
  /** Why the runtime asks: lets a router send summaries to another writer. Informational. */
  stage?: 'act' | 'summarize';
  /**
   * Which episode asks (added by the rollout runtime; optional, informational). Lets remote
   * engines keep one episode's requests on one replica (prefix-cache affinity) and lets tests
   * attribute sampled tokens to episodes.
   */
  episodeId?: string;
  /**
   * This request's own sampling seed (vLLM's `seed`, SGLang's `sampling_params.sampling_seed`):
   * its draws then depend on the seed and its logits alone, not on which requests share its batch.
   * A remote-engine client sets it for requests that name their episode (util/random.ts requestSeed).
   */
  seed?: number;
}

export interface SamplingParams {
  temperature: number;
  topP: number;
}

export interface SampleResult {
  /** New tokens, including the stop token if one ended generation. */
  tokens: number[];
  /**
   * log q(token | prefix) under the distribution the token was drawn from: the policy's logits
   * divided by the temperature, cut to the top-p nucleus and renormalized (the behaviour policy of
   * the off-policy corrections, method §6; at temperature 1 and top-p 1 the policy's own). At
   * temperature 0 the policy's own log-prob of the argmax. One per new token; null when unknown
   * (scripted policies).
   */
  logprobs: (number | null)[];
  /** Entropy of pi(. | prefix) at each new token, when the sampler knows it (the embedded model does). */
  entropies?: number[];
  finishReason: 'stop' | 'length';
  /**
   * The engine's weight version that produced these tokens, when it reports one (SGLang's
   * `meta_info.weight_version`, `crl serve`): lets a client refuse tokens from stale weights.
   */
  weightVersion?: string;
}

/**
 * A batched sampler: every call carries all requests that need tokens now, so engines run full
 * batches. Results come back in request order.
 */
export interface TokenSampler {
  sample(requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]>;
}

/**
 * A sampler call in which the engine failed for some requests after it had served (docs/faults.md):
 * the episodes of those requests end as `engine` faults, the others go on with their results.
 * A sampler throws it only for failures outside the request itself (the engine went away, stayed
 * busy or answered errors past its deadline); a wrong request or a malformed answer is a plain
 * error and ends the run.
 */
export class SamplerFault extends Error {
  override readonly name = 'SamplerFault';
  readonly faultKind = 'engine' as const;
  constructor(
    message: string,
    /** One entry per request of the call, in order: its result, or null where the engine failed. */
    readonly results: readonly (SampleResult | null)[],
    /** Where the engine failed, why (one entry per request, in order; null where it answered). */
    readonly reasons: readonly (string | null)[] = [],
  ) {
    super(message);
  }
}
