/**
 * The runtime's small interfaces. Environments speak text; the runtime owns tokens; samplers
 * (the embedded model, scripted policies, remote engines) take and return token ids.
 */

/** What a task gives at the start of an episode. */
export interface EnvReset {
  /** The user instruction u (method §2). */
  instruction: string;
}

/** What a task gives after each action. */
export interface EnvStep {
  observation: string;
  done: boolean;
  /** The verified outcome; only meaningful when done (1 pass, 0 fail unless graded). */
  reward: number;
}

/** Per-call options the runtime passes to an environment. */
export interface EnvCallOptions {
  /**
   * Aborted when the runtime gives up on this call (its timeout passed, or the whole run was
   * cancelled). An environment that does real work (a sandbox) stops it; the runtime then closes it.
   */
  signal?: AbortSignal;
}

/**
 * A task instance: text in, text out; one episode at a time per instance. The runtime awaits
 * every call, so reset/step may return promises (a sandboxed shell does) or answer at once (the
 * in-process text games do; they need no close). The runtime calls close() once, when the episode
 * ends for any reason, and never calls the instance again afterwards.
 */
export interface Environment {
  /** Registered family name, e.g. 'kv-ledger'. */
  readonly name: string;
  reset(seed: number, options?: EnvCallOptions): EnvReset | Promise<EnvReset>;
  step(action: string, options?: EnvCallOptions): EnvStep | Promise<EnvStep>;
  /** Releases everything the instance holds (processes, files); must not throw for a healthy instance. */
  close?(): void | Promise<void>;
}

/**
 * Token ids <-> text for one vocabulary (the built-in word vocabulary, or a Hugging Face tokenizer:
 * model/load-tokenizer.ts). Chat markers are not the tokenizer's business: rollout/chat-format.ts
 * derives them from the model's chat template.
 */
export interface Tokenizer {
  /** Every id is below this. */
  readonly vocabSize: number;
  /** Text -> ids; adds no special token of its own. */
  encode(text: string): number[];
  decode(tokens: ArrayLike<number>): string;
  /** True for a word-level vocabulary, where whitespace only separates tokens (the word tokenizer). */
  readonly wordLevel?: boolean;
}

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
}

export interface SamplingParams {
  temperature: number;
  topP: number;
}

export interface SampleResult {
  /** New tokens, including the stop token if one ended generation. */
  tokens: number[];
  /**
   * log pi(token | prefix) under the policy's own distribution (temperature 1, no top-p truncation:
   * what PPO's old log-probs mean, method §6), one per new token; null when unknown (scripted policies).
   */
  logprobs: (number | null)[];
  /** Entropy of pi(. | prefix) at each new token, when the sampler knows it (the embedded model does). */
  entropies?: number[];
  finishReason: 'stop' | 'length';
}

/**
 * A batched sampler: every call carries all requests that need tokens now, so engines run full
 * batches. Results come back in request order.
 */
export interface TokenSampler {
  sample(requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]>;
}

/** A parsed chat turn, as a text-level policy sees it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'observation';
  content: string;
}
