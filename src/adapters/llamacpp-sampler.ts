import { resolve } from 'node:path';
import type { LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';
import { vocabMapFromGguf } from '../model/formats/gguf-vocab.ts';
import { SequenceTooLongError } from '../model/network/pack.ts';
import { drawScratch, drawToken } from '../model/sampler/sampling.ts';
import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from '../contracts/index.ts';
import { requestStreams, type Rng } from '../util/random.ts';
import { UNKNOWN_LOGIT, type VocabMap } from '../model/tokenizer/vocab-map.ts';
import { asToken, createContext, LlamaCppError, loadGgufModel, modelVocabSize } from './llamacpp.ts';

/**
 * A TokenSampler over a GGUF file run by llama.cpp (`--policy llamacpp:FILE.gguf`).
 *
 * Batching: the requests of one call are parallel sequences of one llama.cpp context. Each step
 * issues every active sequence's evaluation at once; node-llama-cpp gathers evaluations queued in
 * the same tick into one llama_decode batch, so B sequences cost one decode per step, plus one
 * JavaScript round trip per sequence per token (the library has no multi-token-per-call sampling
 * API that also returns the full distribution). A prompt is evaluated in two batches: all but its
 * last token without reading anything, then the last tokens of all sequences with one read each,
 * in ascending sequence order (next() says why).
 *
 * Tokens are drawn here, from llama.cpp's full next-token distribution (temperature 0 in
 * node-llama-cpp = no sampler transform), with the embedded sampler's drawToken and the given rng:
 * log-probs are those of the distribution each token was drawn from (logits / T, top-p nucleus;
 * the behaviour policy, method §6), entropies the model's own, and a seed reproduces the draws.
 *
 * Multi-turn: a sequence keeps its KV cache between calls; a request goes to the free sequence
 * whose cached tokens share the longest prefix with its prompt, and only the rest is evaluated.
 */
export class LlamaCppSampler implements TokenSampler {
  private context: LlamaContext | null = null;
  private sequences: LlamaContextSequence[] = [];
  private readonly scratch;
  private readonly model: LlamaModel;
  /** The generator of each request: its episode's own stream (util/random.ts requestStreams). */
  private readonly streamOf: (req: SampleRequest) => Rng;
  readonly vocabSize: number;
  /**
   * Tokens one sequence may hold: the rollout's window (C, which holds the summary prompt too), not
   * the model's trained context length: Qwen3's 40,960 positions would take a KV cache of
   * gigabytes per sequence that no episode uses.
   */
  readonly contextSize: number;
  private readonly vocab: VocabMap;

  constructor({ policy, rng, contextSize }: { policy: LlamaCppPolicy; rng: Rng; contextSize: number }) {
    if (!Number.isInteger(contextSize) || contextSize < 1)
      throw new LlamaCppError(`the context window must be a positive integer, got ${contextSize}`);
    if (contextSize > policy.contextSize)
      throw new LlamaCppError(
        `a context window of ${contextSize} tokens exceeds the model's context length ${policy.contextSize} (${policy.path})`,
      );
    this.model = policy.model;
    this.streamOf = requestStreams(rng);
    this.vocabSize = policy.vocabSize;
    this.contextSize = contextSize;
    this.vocab = policy.vocab;
    this.scratch = drawScratch(this.vocabSize);
  }

  /** Loads the file (once per process) and makes a sampler with its own context of `contextSize` tokens. */
  static async open({
    path,
    rng,
    contextSize,
  }: {
    path: string;
    rng: Rng;
    contextSize: number;
  }): Promise<LlamaCppSampler> {
    return new LlamaCppSampler({ policy: await LlamaCppPolicy.load(path), rng, contextSize });
  }

  /** A context with at least n sequences (a new, larger one drops the KV caches). */
  private async ensureSequences(n: number): Promise<void> {
    if (this.context && this.sequences.length >= n) return;
    const total = Math.max(n, 2 * this.sequences.length, 1);
    await this.context?.dispose();
    this.context = await createContext({ model: this.model, contextSize: this.contextSize, sequences: total });
    this.sequences = Array.from({ length: total }, () => this.context!.getSequence());
  }

  /** Request i -> a sequence, preferring the longest cached prefix of its prompt. */
  private assign(prompts: readonly (readonly number[])[]): LlamaContextSequence[] {
    const free = new Set(this.sequences);
    const out: LlamaContextSequence[] = [];
    for (const prompt of prompts) {
      let best: LlamaContextSequence | null = null;
      let bestLen = -1;
      for (const s of free) {
        const len = commonPrefix(s.contextTokens, prompt);
        if (len > bestLen) [best, bestLen] = [s, len];
      }
      free.delete(best!);
      out.push(best!);
    }
    return out;
  }

  /**
   * Evaluates one token on each sequence as one batch and returns each one's next-token
   * log-probabilities, in the order given.
   *
   * Why the order of issue matters: node-llama-cpp reads the distributions of one batch from
   * several threads at once, and llama.cpp (without a unified KV cache) puts a batch's outputs back
   * in order lazily, on the first read, without a lock. A batch whose outputs are already in order
   * has nothing to reorder; it is in order when its sequences come in ascending id order with one
   * output each. Measured before this rule with a 65,536-token vocabulary: 55 of 2,420 log-probs
   * were another sequence's (a rare CI failure with the test's small vocabulary).
   */
  private async next(sequences: readonly LlamaContextSequence[], tokens: readonly number[]): Promise<Float32Array[]> {
    // llama.cpp ids: the context hands them out in the order this.sequences was made.
    const id = sequences.map((s) => this.sequences.indexOf(s));
    const order = sequences.map((_, k) => k).sort((a, b) => id[a]! - id[b]!);
    const out: Float32Array[] = new Array<Float32Array>(sequences.length);
    await Promise.all(order.map(async (k) => (out[k] = await this.step(sequences[k]!, tokens[k]!))));
    return out;
  }

  /** Evaluates `token` on the sequence and returns the next-token log-probabilities. */
  private async step(sequence: LlamaContextSequence, token: number): Promise<Float32Array> {
    const out = await sequence.controlledEvaluate([[asToken(token), { generateNext: { probabilities: true } }]]);
    const probs = out[0]?.next.probabilities;
    if (!probs) throw new LlamaCppError('llama.cpp returned no next-token probabilities');
    // Finite floor instead of log(0) = -Infinity, so entropy terms p·log p stay 0, not NaN.
    const lp = new Float32Array(this.vocabSize).fill(UNKNOWN_LOGIT);
    for (const [tok, p] of probs) if (p > 0) lp[tok] = Math.log(p);
    // A trimmed vocabulary's unknown slot is never emitted (vocab-map.ts); drawToken renormalizes.
    if (this.vocab.unknown !== null) lp[this.vocab.unknown] = UNKNOWN_LOGIT;
    return lp;
  }

  /**
   * Brings the sequence to `prompt` minus its last token, keeping what it already holds. No
   * distribution is read here, so prompts of different lengths can share a batch (their outputs
   * come back out of order, see next()).
   */
  private async prefill(sequence: LlamaContextSequence, prompt: readonly number[]): Promise<void> {
    const keep = Math.min(commonPrefix(sequence.contextTokens, prompt), prompt.length - 1);
    if (keep < sequence.contextTokens.length)
      await sequence.eraseContextTokenRanges([{ start: keep, end: sequence.contextTokens.length }]);
    const rest = prompt.slice(keep, -1).map(asToken);
    if (rest.length > 0) await sequence.controlledEvaluate(rest);
  }

  async sample(requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]> {
    if (!(params.temperature >= 0)) throw new Error(`temperature must be >= 0 (0 = greedy), got ${params.temperature}`);
    if (!(params.topP > 0 && params.topP <= 1)) throw new Error(`topP must be in (0, 1], got ${params.topP}`);
    requests.forEach((r, i) => {
      if (r.prompt.length === 0) throw new Error(`request ${i}: the prompt is empty; it needs at least one token`);
      const total = r.prompt.length + r.maxTokens;
      if (total > this.contextSize)
        throw new SequenceTooLongError(
          total,
          this.contextSize,
          `request ${i}: prompt (${r.prompt.length}) + maxTokens (${r.maxTokens})`,
          `the sampler's context window of ${this.contextSize} tokens; shorten it or raise --context`,
        );
    });
    const results: SampleResult[] = requests.map(() => ({
      tokens: [],
      logprobs: [],
      entropies: [],
      finishReason: 'length',
    }));
    const todo = requests.flatMap((r, i) => (r.maxTokens > 0 ? [i] : []));
    if (todo.length === 0) return results;
    await this.ensureSequences(todo.length);
    // Real ids in, the file's rows inside, real ids out (identity unless the vocabulary is trimmed).
    const prompts = requests.map((r) => Array.from(this.vocab.toInternal(r.prompt)));
    const seqs = this.assign(todo.map((i) => prompts[i]!));
    const rngs = requests.map((r) => this.streamOf(r));
    const stops = requests.map((r) => new Set(r.stopTokens));
    let active = todo.map((req, k) => ({ req, seq: seqs[k]! }));
    await Promise.all(active.map((a) => this.prefill(a.seq, prompts[a.req]!)));
    let dists = await this.next(
      active.map((a) => a.seq),
      active.map((a) => prompts[a.req]!.at(-1)!),
    );
    while (active.length > 0) {
      const next: typeof active = [];
      const nextTokens: number[] = [];
      // Requests in order, one draw each from the request's stream (its episode's own, or the
      // shared one): a seed and the same requests give the same tokens.
      active.forEach((a, k) => {
        const d = drawToken({
          logits: dists[k]!,
          offset: 0,
          v: this.vocabSize,
          temperature: params.temperature,
          topP: params.topP,
          rng: rngs[a.req]!,
          scratch: this.scratch,
        });
        const res = results[a.req]!;
        const token = this.vocab.toReal(d.token);
        res.tokens.push(token);
        res.logprobs.push(d.logprob);
        res.entropies!.push(d.entropy);
        if (stops[a.req]!.has(token)) res.finishReason = 'stop';
        else if (res.tokens.length < requests[a.req]!.maxTokens) {
          next.push(a);
          nextTokens.push(d.token);
        }
      });
      active = next;
      if (active.length > 0)
        dists = await this.next(
          active.map((a) => a.seq),
          nextTokens,
        );
    }
    return results;
  }

  /** Frees the context (the model stays loaded for other samplers of the same file). */
  async dispose(): Promise<void> {
    await this.context?.dispose();
    this.context = null;
    this.sequences = [];
  }
}

/** A GGUF model loaded once per path and process; samplers share it, each with its own context. */
export class LlamaCppPolicy {
  private static readonly loaded = new Map<string, Promise<LlamaCppPolicy>>();

  private constructor(
    readonly path: string,
    readonly model: LlamaModel,
    /** Token ids the model's vocabulary holds. */
    readonly vocabSize: number,
    /** The model's trained context length (GGUF `<arch>.context_length`). */
    readonly contextSize: number,
    /** Real ids <-> the file's rows and the tokenizer they belong to (compaction_rl.* keys). */
    readonly vocab: VocabMap,
  ) {}

  static load(path: string): Promise<LlamaCppPolicy> {
    const key = resolve(path);
    let p = LlamaCppPolicy.loaded.get(key);
    if (!p) {
      p = loadGgufModel(key).then((m) => {
        const size = modelVocabSize(m);
        return new LlamaCppPolicy(key, m, size, m.trainContextSize, vocabMapFromGguf(m.fileInfo.metadata, size));
      });
      p.catch(() => LlamaCppPolicy.loaded.delete(key));
      LlamaCppPolicy.loaded.set(key, p);
    }
    return p;
  }
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** `llamacpp:FILE.gguf` (the `--policy` form of crl run and crl eval) -> the file; null for anything else. */
export function llamaCppPolicyPath(policy: string): string | null {
  const m = /^llamacpp:(.+)$/.exec(policy);
  return m ? m[1]! : null;
}
