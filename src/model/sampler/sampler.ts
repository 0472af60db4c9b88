import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from '../../contracts/index.ts';
import { requestStreams, type Rng } from '../../util/random.ts';
import { KvDecoder } from './kv-decoder.ts';
import { SequenceTooLongError } from '../network/pack.ts';
import type { PolicyModel } from '../network/policy.ts';
import { drawRows, drawScratch } from './sampling.ts';
import type { VocabMap } from '../tokenizer/vocab-map.ts';
import { resolvePrecision, type PrecisionChoice, type WeightPrecision } from '../network/weight-precision.ts';

/**
 * The embedded engine's TokenSampler: batched generation with a KV cache over ragged prompts.
 * It reads the live PolicyModel's parameters, so "publishing new weights" after a step is a no-op:
 * the next call prepares the sampler's copy of the matrices from them (f32 packed, or f16 / bf16
 * with `precision`, network/weight-precision.ts; training's f32 master weights are never rounded). logprobs are under the distribution each token was drawn from (softmax(z / T) cut to its
 * top-p nucleus, network/sampling-transform.ts; the model's own at temperature 1 and top-p 1), entropies
 * under the model's own (sampling.ts says why).
 * Randomness: a request that names its episode (the rollout runtime's do) draws from its own
 * stream, seeded by the sampler's seed, the episode id and the prompt's tokens, so an episode's
 * tokens do not depend on which other episodes shared its batch or in what order they arrived:
 * with sandboxed environments that order is the machine's timing, and one shared stream made two
 * runs of the same seed diverge from their first batch. Row results do not depend on the batch
 * (the kernels compute each row alone), so a seed reproduces its episodes. Requests without an
 * episode id draw one rng.next() per token from the shared stream, visited in request order.
 * Multi-turn: the KV cache persists between calls, so a prompt that extends an earlier prompt and
 * its generation only runs its new tokens (kv-decoder.ts). If you write to the policy's params
 * directly (not through step()), call policy.net.markWeightsChanged() so the cache is dropped.
 */
export class ModelSampler implements TokenSampler {
  private readonly decoder: KvDecoder;
  /** The generator of each request (util/random.ts requestStreams over the constructor's rng). */
  private readonly streamOf: (req: SampleRequest) => Rng;
  private readonly vocab: VocabMap;
  /** The precision its weight matrices are read in ('auto' resolved by the model's size). */
  readonly precision: WeightPrecision;

  constructor({ policy, rng, precision = 'auto' }: { policy: PolicyModel; rng: Rng; precision?: PrecisionChoice }) {
    this.precision = resolvePrecision(precision, policy.net.paramCount);
    this.decoder = new KvDecoder(policy.net, this.precision);
    // Prepared now rather than at the first call: a server's first request does not wait for it,
    // and weights the precision cannot hold are refused before any work starts.
    policy.net.inferenceWeights(this.precision);
    this.streamOf = requestStreams(rng);
    this.vocab = policy.vocab;
  }

  async sample(requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]> {
    return this.sampleSync(requests, params);
  }

  sampleSync(requests: readonly SampleRequest[], params: SamplingParams): SampleResult[] {
    const cfg = this.decoder.cfg;
    if (!(params.temperature >= 0)) throw new Error(`temperature must be >= 0 (0 = greedy), got ${params.temperature}`);
    if (!(params.topP > 0 && params.topP <= 1)) throw new Error(`topP must be in (0, 1], got ${params.topP}`);
    const b = requests.length;
    let maxTotal = 1;
    requests.forEach((r, i) => {
      if (r.prompt.length === 0) throw new Error(`request ${i}: the prompt is empty; it needs at least one token`);
      if (!Number.isInteger(r.maxTokens) || r.maxTokens < 0)
        throw new Error(`request ${i}: maxTokens must be a non-negative integer, got ${r.maxTokens}`);
      const total = r.prompt.length + r.maxTokens;
      if (total > cfg.maxSeqLen)
        throw new SequenceTooLongError(
          total,
          cfg.maxSeqLen,
          `request ${i}: prompt (${r.prompt.length}) + maxTokens (${r.maxTokens})`,
        );
      maxTotal = Math.max(maxTotal, total);
    });
    const results: SampleResult[] = requests.map(() => ({
      tokens: [],
      logprobs: [],
      entropies: [],
      finishReason: 'length',
    }));
    if (b === 0) return results;
    const v = cfg.vocabSize;
    const scratch = drawScratch(v);
    // Requests speak real ids; the network its own indices (tokenizer/vocab-map.ts). A stop id outside a
    // trimmed vocabulary can never be drawn, so it is left out.
    const map = this.vocab;
    const stops = requests.map(
      (r) => new Set(r.stopTokens.filter((s) => map.covers(s)).map((s) => map.toInternalId(s))),
    );
    const reqIds = new Int32Array(b); // [A] request of each advancing row
    const slotIds = new Int32Array(b); // [A] its KV slot
    const next = new Int32Array(b);
    const started = this.decoder.start({ prompts: requests.map((r) => map.toInternal(r.prompt)), maxTotal });
    let logits = started.logits;
    map.maskLogits(logits, b);
    for (let i = 0; i < b; i++) reqIds[i] = i;
    const rngs = requests.map(this.streamOf); // [B]
    let active = b;
    while (active > 0) {
      let count = 0;
      const rows: number[] = [];
      for (let a = 0; a < active; a++)
        if (results[reqIds[a]!]!.tokens.length < requests[reqIds[a]!]!.maxTokens) rows.push(a); // not maxTokens 0
      const draws = drawRows({
        logits,
        rows,
        v,
        temperature: params.temperature,
        topP: params.topP,
        rng: rows.map((a) => rngs[reqIds[a]!]!),
        scratch,
      });
      rows.forEach((a, k) => {
        const d = draws[k]!;
        const ri = reqIds[a]!;
        const req = requests[ri]!;
        const res = results[ri]!;
        res.tokens.push(map.toReal(d.token));
        res.logprobs.push(d.logprob);
        res.entropies!.push(d.entropy);
        if (stops[ri]!.has(d.token)) res.finishReason = 'stop';
        else if (res.tokens.length < req.maxTokens) {
          reqIds[count] = ri;
          slotIds[count] = started.slots[ri]!;
          next[count] = d.token;
          count++;
        }
      });
      active = count;
      if (active > 0) {
        logits = this.decoder.step({ slotIds, tokens: next, count: active });
        map.maskLogits(logits, active);
      }
    }
    return results;
  }
}
