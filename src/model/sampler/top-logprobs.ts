import { KvDecoder } from './kv-decoder.ts';
import type { PolicyModel } from '../network/policy.ts';
import { applySamplingTransform } from '../network/sampling-transform.ts';

/**
 * Teacher-forced next-token distributions of a sequence, for an OpenAI-style `logprobs: k` answer
 * (crl serve's /v1/completions): at each position t >= from, log pi(seq[t] | seq[<t]) and the k
 * most likely tokens with their log-probs. Runs the sequence through its own KV decoder, one token
 * per step, so it never disturbs a sampler's cache. V = vocab.
 */
export interface PositionLogprobs {
  /** log pi(seq[t] | seq[<t]) (under the sampling transform where one is given). */
  logprob: number;
  /** The k most likely token ids, most likely first, with their log-probs. */
  top: { id: number; logprob: number }[];
}

/** The sampling settings of the positions from `from` on (topLogprobs). */
export interface ScoreSampling {
  temperature: number;
  topP: number;
  from: number;
}

export function topLogprobs(options: {
  policy: PolicyModel;
  seq: readonly number[];
  /** First position reported (>= 1: position 0 has no prefix). */
  from: number;
  k: number;
  /**
   * Positions from `sampling.from` on were sampled at this temperature and top-p: their log-probs
   * are under that distribution (network/sampling-transform.ts), as the sampler reports the token's own
   * and vLLM's processed_logprobs mode reports both; positions before it (the prompt) are the
   * model's own. Absent or temperature 0: the model's own everywhere.
   */
  sampling?: ScoreSampling;
}): PositionLogprobs[] {
  const { from, k, sampling } = options;
  const map = options.policy.vocab; // real ids in and out; the network's own indices inside (tokenizer/vocab-map.ts)
  const seq = map.toInternal(options.seq);
  if (!(from >= 1 && from <= seq.length)) throw new Error(`from must be in [1, ${seq.length}], got ${from}`);
  const decoder = new KvDecoder(options.policy.net);
  const v = decoder.cfg.vocabSize;
  const out: PositionLogprobs[] = [];
  const slotIds = new Int32Array(1);
  const token = new Int32Array(1);
  let logits = decoder.start({ prompts: [seq.slice(0, from)], maxTotal: seq.length }).logits; // [1, V]
  slotIds[0] = 0;
  for (let t = from; t < seq.length; t++) {
    map.maskLogits(logits, 1);
    if (sampling && sampling.temperature > 0 && t >= sampling.from)
      applySamplingTransform({ logits, targets: Int32Array.of(seq[t]!), n: 1, v, ...sampling });
    const row = rowLogprobs({ logits, v, target: seq[t]!, k, skip: map.unknown ?? -1 });
    out.push({ logprob: row.logprob, top: row.top.map((c) => ({ id: map.toReal(c.id), logprob: c.logprob })) });
    if (t + 1 < seq.length) {
      token[0] = seq[t]!;
      logits = decoder.step({ slotIds, tokens: token, count: 1 });
    }
  }
  return out;
}

/** log-softmax of one logits row (max-shifted, float64 sum), at the target and the top k. */
function rowLogprobs(options: {
  logits: Float32Array;
  v: number;
  target: number;
  k: number;
  /** An index never reported among the top (a trimmed vocabulary's unknown slot), or -1. */
  skip: number;
}): PositionLogprobs {
  const { logits, v, target, k, skip } = options;
  let mx = -Infinity;
  for (let j = 0; j < v; j++) mx = Math.max(mx, logits[j]!);
  let sum = 0;
  for (let j = 0; j < v; j++) sum += Math.exp(logits[j]! - mx);
  const lse = mx + Math.log(sum);
  // k is small (<= 20): keep a sorted list of the best k while scanning once.
  const top: { id: number; logprob: number }[] = [];
  for (let j = 0; j < v && k > 0; j++) {
    if (j === skip) continue;
    const lp = logits[j]! - lse;
    if (top.length === k && lp <= top[k - 1]!.logprob) continue;
    let i = top.length;
    while (i > 0 && top[i - 1]!.logprob < lp) i--;
    top.splice(i, 0, { id: j, logprob: lp });
    if (top.length > k) top.pop();
  }
  return { logprob: logits[target]! - lse, top };
}
