import { nativeOps } from '../../tensor/native-ops.ts';
import { Rng } from '../../util/random.ts';
import { topPCut } from '../network/sampling-transform.ts';

/**
 * Picking one token from one row of logits. V = vocab.
 *
 * The returned log-prob is the token's under the distribution it was drawn from: softmax(z / T)
 * cut to its top-p nucleus and renormalized (network/sampling-transform.ts), the behaviour policy that the
 * off-policy corrections divide by (docs/async.md). The trainer scores tokens under the same
 * transform (method §6). At temperature 1 and top-p 1 that is the model's own distribution, with
 * logprob.ts's formula (max-shifted log-sum-exp in float64), so the two agree to float rounding.
 * Greedy (temperature 0) reports the model's own log-prob of the argmax, as vLLM and SGLang do;
 * its distribution is a point mass, so training refuses temperature 0 (rollout/config.ts).
 * The entropy is always the model's own distribution's (temperature 1, untruncated): a report.
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
 * draws. At temperature 1 or 0 with top-p 1 (RL's default settings) the native addon draws the rows
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
  if (!(temperature > 0)) return { token: arg, logprob: logits[offset + arg]! - lse, entropy };
  const drawn = sampleAdjusted({ logits, offset, v, temperature, topP, rng, scratch, mx, sum });
  // At temperature 1 and top-p 1 the draw's distribution is the model's: the log-sum-exp formula,
  // as logprob.ts and the native draw compute it, so the three agree to rounding.
  const plain = temperature === 1 && topP >= 1;
  return { token: drawn.token, logprob: plain ? logits[offset + drawn.token]! - lse : drawn.logprob, entropy };
}

/**
 * Samples from softmax(z / T) restricted to its top-p nucleus (network/sampling-transform.ts) and returns
 * the token with its log-prob under that distribution.
 */
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
}): { token: number; logprob: number } {
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
  // log q(token) = (z_token - mx) / T - log(mass): the drawn-from distribution, renormalized.
  const withLogprob = (token: number, mass: number): { token: number; logprob: number } => ({
    token,
    logprob: (logits[offset + token]! - mx) / temperature - Math.log(mass),
  });
  if (topP < 1) {
    const { kept, mass } = topPCut({ weights: probs, order, v, total: z, topP });
    let u = rng.next() * mass;
    for (let j = 0; j < kept; j++) {
      u -= probs[order[j]!]!;
      if (u < 0) return withLogprob(order[j]!, mass);
    }
    return withLogprob(order[kept - 1]!, mass);
  }
  let u = rng.next() * z;
  for (let j = 0; j < v; j++) {
    u -= probs[j]!;
    if (u < 0) return withLogprob(j, z);
  }
  // Float rounding left u >= 0 after the last term: take the last token with mass.
  for (let j = v - 1; j >= 0; j--) if (probs[j]! > 0) return withLogprob(j, z);
  return withLogprob(0, z);
}
