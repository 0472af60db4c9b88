import type { Rng } from '../util/random.ts';

/**
 * Picking one token from one row of logits. V = vocab.
 *
 * The returned log-prob and entropy are those of the model's own distribution (temperature 1, no
 * top-p), whatever the sampling settings: PPO's old log-probs and the sampler/trainer mismatch
 * report need pi(token | prefix), not the truncated or sharpened proposal (method §6). The formula
 * is logprob.ts's (max-shifted log-sum-exp in float64), so the two agree to float rounding.
 */
export interface TokenDraw {
  token: number;
  logprob: number;
  entropy: number;
}

export interface DrawScratch {
  probs: Float64Array; // [V]
  order: Int32Array; // [V]
}

export function drawScratch(v: number): DrawScratch {
  return { probs: new Float64Array(v), order: new Int32Array(v) };
}

export function drawToken({
  logits,
  offset,
  v,
  temperature,
  topP,
  rng,
  scratch,
}: {
  logits: Float32Array; // row at offset, [V]
  offset: number;
  v: number;
  temperature: number;
  topP: number;
  rng: Rng;
  scratch: DrawScratch;
}): TokenDraw {
  let mx = -Infinity;
  let arg = 0;
  for (let j = 0; j < v; j++) {
    const z = logits[offset + j]!;
    if (z > mx) {
      mx = z;
      arg = j;
    }
  }
  let sum = 0;
  for (let j = 0; j < v; j++) sum += Math.exp(logits[offset + j]! - mx);
  const lse = mx + Math.log(sum);
  let entropy = 0;
  for (let j = 0; j < v; j++) {
    const lp = logits[offset + j]! - lse;
    entropy -= Math.exp(lp) * lp;
  }
  let token = arg;
  if (temperature > 0) token = sampleAdjusted({ logits, offset, v, temperature, topP, rng, scratch, mx });
  return { token, logprob: logits[offset + token]! - lse, entropy };
}

/** Samples from softmax(z / T) restricted to the smallest top set with mass >= topP. */
function sampleAdjusted({
  logits,
  offset,
  v,
  temperature,
  topP,
  rng,
  scratch,
  mx,
}: {
  logits: Float32Array;
  offset: number;
  v: number;
  temperature: number;
  topP: number;
  rng: Rng;
  scratch: DrawScratch;
  mx: number;
}): number {
  const { probs, order } = scratch;
  let z = 0;
  for (let j = 0; j < v; j++) {
    const e = Math.exp((logits[offset + j]! - mx) / temperature);
    probs[j] = e;
    z += e;
  }
  let kept = v;
  let mass = z;
  if (topP < 1) {
    for (let j = 0; j < v; j++) order[j] = j;
    // Ties broken by id so the result is deterministic across engines.
    const sorted = Array.from(order.subarray(0, v)).sort((a, b) => probs[b]! - probs[a]! || a - b);
    for (let j = 0; j < v; j++) order[j] = sorted[j]!;
    let cum = 0;
    for (let j = 0; j < v; j++) {
      cum += probs[order[j]!]!;
      if (cum >= topP * z) {
        kept = j + 1;
        break;
      }
    }
    mass = 0;
    for (let j = 0; j < kept; j++) mass += probs[order[j]!]!;
    let u = rng.next() * mass;
    for (let j = 0; j < kept; j++) {
      u -= probs[order[j]!]!;
      if (u < 0) return order[j]!;
    }
    return order[kept - 1]!;
  }
  let u = rng.next() * mass;
  for (let j = 0; j < v; j++) {
    u -= probs[j]!;
    if (u < 0) return j;
  }
  // Float rounding left u >= 0 after the last term: take the last token with mass.
  for (let j = v - 1; j >= 0; j--) if (probs[j]! > 0) return j;
  return 0;
}
