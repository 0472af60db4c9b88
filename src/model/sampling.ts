import { nativeOps } from '../tensor/native-ops.ts';
import { Rng } from '../util/random.ts';

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
  rows: RowScratch | null; // drawRows' per-row arrays, grown on demand
}

interface RowScratch {
  u: Float64Array;
  tokens: Int32Array;
  logprobs: Float64Array;
  entropies: Float64Array;
}

export function drawScratch(v: number): DrawScratch {
  return { probs: new Float64Array(v), order: new Int32Array(v), rows: null };
}

/**
 * drawToken on each row of `rows` (indices into [N, V] logits), in that order, with the same rng
 * draws. At temperature 1 or 0 with top-p 1 (what RL samples with) the native addon draws the rows
 * on both threads with drawToken's formulas and a vectorized exp (log-probs and entropies within
 * 1e-12 of drawToken's, the same tokens but where a draw falls within rounding of a boundary):
 * with a 151,936-token vocabulary drawToken takes about 3 ms a row, a third of a 0.6B batch-8
 * decode step, and a scalar call of V8's own exp per logit natively still 2.7 ms.
 */
export function drawRows({
  logits,
  rows,
  v,
  temperature,
  topP,
  rng,
  scratch,
}: {
  logits: Float32Array; // [N, V]
  rows: readonly number[];
  v: number;
  temperature: number;
  topP: number;
  /** One stream for all rows, drawn in row order, or one per row (rows[k] draws from rng[k]). */
  rng: Rng | readonly Rng[];
  scratch: DrawScratch;
}): TokenDraw[] {
  const rngOf = (k: number): Rng => (rng instanceof Rng ? rng : rng[k]!);
  const native = nativeOps?.drawRows;
  const contiguous = rows.every((r, i) => r === i);
  if (!native || !contiguous || topP !== 1 || (temperature !== 1 && temperature !== 0) || rows.length === 0)
    return rows.map((r, k) => drawToken({ logits, offset: r * v, v, temperature, topP, rng: rngOf(k), scratch }));
  const n = rows.length;
  if (!scratch.rows || scratch.rows.u.length < n)
    scratch.rows = {
      u: new Float64Array(n),
      tokens: new Int32Array(n),
      logprobs: new Float64Array(n),
      entropies: new Float64Array(n),
    };
  const { u, tokens, logprobs, entropies } = scratch.rows;
  for (let i = 0; i < n; i++) u[i] = temperature > 0 ? rngOf(i).next() : -1;
  native({ logits, n, v, u, tokens, logprobs, entropies });
  return Array.from({ length: n }, (_, i) => ({ token: tokens[i]!, logprob: logprobs[i]!, entropy: entropies[i]! }));
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
  // One exp per logit for the sum, the entropy and (at temperature 1) the draw: with a 151,936-row
  // vocabulary the three passes this replaced took about a third of a batch-8 decode step.
  // H = -sum p_j (z_j - lse) = log(sum) - sum e_j (z_j - mx) / sum, with e_j = exp(z_j - mx); a
  // masked logit (e_j = 0) adds nothing, where 0 * -Infinity would be NaN.
  const { probs } = scratch;
  let sum = 0;
  let ez = 0;
  for (let j = 0; j < v; j++) {
    const d = logits[offset + j]! - mx;
    const e = Math.exp(d);
    probs[j] = e;
    sum += e;
    if (e > 0) ez += e * d;
  }
  const logSum = Math.log(sum);
  const lse = mx + logSum;
  const entropy = logSum - ez / sum;
  let token = arg;
  if (temperature > 0) token = sampleAdjusted({ logits, offset, v, temperature, topP, rng, scratch, mx, sum });
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
  sum,
}: {
  logits: Float32Array;
  offset: number;
  v: number;
  temperature: number;
  topP: number;
  rng: Rng;
  scratch: DrawScratch;
  mx: number;
  sum: number; // sum of exp(z - mx): probs holds those terms on entry
}): number {
  const { probs, order } = scratch;
  let z = sum;
  if (temperature !== 1) {
    z = 0;
    for (let j = 0; j < v; j++) {
      const e = Math.exp((logits[offset + j]! - mx) / temperature);
      probs[j] = e;
      z += e;
    }
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
