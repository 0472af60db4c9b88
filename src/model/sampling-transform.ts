/**
 * The distribution a token is drawn from: softmax(z / T) restricted to its top-p nucleus and
 * renormalized. The sampler draws from it and records each token's log-prob under it (the
 * behaviour policy of the off-policy corrections, docs/async.md); the trainer scores tokens under
 * the same transform of its own logits (policy.ts), so the PPO ratio and the importance weights
 * compare one distribution with itself (method §6). V = vocabulary.
 *
 * The nucleus: tokens sorted by probability, highest first, ties broken by the lower id (so two
 * engines that agree on the logits agree on the set); the shortest prefix whose mass reaches
 * topP of the total. At top-p 1 it is the whole vocabulary.
 */

/**
 * Sorts `order` by `weights` (descending, ties by id) and returns how many lead the nucleus and
 * their summed weight. `weights` are unnormalized (exp((z - max) / T)); `total` is their sum.
 */
export function topPCut({
  weights,
  order,
  v,
  total,
  topP,
}: {
  weights: Float64Array; // [V] unnormalized probabilities
  order: Int32Array; // [V] scratch: on return, token ids by weight, highest first
  v: number;
  total: number;
  topP: number;
}): { kept: number; mass: number } {
  for (let j = 0; j < v; j++) order[j] = j;
  const sorted = Array.from(order.subarray(0, v)).sort((a, b) => weights[b]! - weights[a]! || a - b);
  for (let j = 0; j < v; j++) order[j] = sorted[j]!;
  let cum = 0;
  for (let j = 0; j < v; j++) {
    cum += weights[order[j]!]!;
    if (cum >= topP * total) return { kept: j + 1, mass: cum };
  }
  return { kept: v, mass: cum }; // rounding kept the sum under topP * total: everything
}

/**
 * log q(token) for q = softmax(row / T) cut to its top-p nucleus and renormalized; -Infinity for a
 * token outside the nucleus. temperature > 0. A reference formula (one row, allocates): the
 * sampler's draw and the trainer's transform compute the same numbers in place.
 */
export function sampledLogprob({
  row,
  token,
  temperature,
  topP,
}: {
  row: ArrayLike<number>; // [V] logits
  token: number;
  temperature: number;
  topP: number;
}): number {
  const v = row.length;
  let mx = -Infinity;
  for (let j = 0; j < v; j++) mx = Math.max(mx, row[j]!);
  const weights = new Float64Array(v);
  let total = 0;
  for (let j = 0; j < v; j++) total += weights[j] = Math.exp((row[j]! - mx) / temperature);
  if (topP >= 1) return (row[token]! - mx) / temperature - Math.log(total);
  const order = new Int32Array(v);
  const { kept, mass } = topPCut({ weights, order, v, total, topP });
  for (let j = 0; j < kept; j++) if (order[j] === token) return (row[token]! - mx) / temperature - Math.log(mass);
  return -Infinity;
}

/** What a logit outside the nucleus becomes in the trainer: exp() of it is 0, and 0 * it is 0 (not NaN). */
export const OUTSIDE_NUCLEUS_LOGIT = -1e30;

/**
 * The trainer's side, in place on [N, V] logits: each row becomes z / T, and with top-p < 1 every
 * logit outside the row's nucleus becomes OUTSIDE_NUCLEUS_LOGIT, except the row's target's.
 * log_softmax of the result is then the log-prob under the sampling distribution of any target
 * inside the nucleus, to float rounding. A target outside it (a stale token the current weights no
 * longer propose, or one the update pushed out) is scored over the nucleus plus itself: its
 * log-prob under the exact transform is -Infinity, which no loss can carry. The nucleus is a
 * constant of the logits (piecewise constant), so the gradient through the transform is dz / T
 * on every kept logit and 0 elsewhere (temperatureBackward). T = 1 and top-p = 1 leave the
 * logits untouched, bit for bit.
 */
export function applySamplingTransform({
  logits,
  targets,
  n,
  v,
  temperature,
  topP,
}: {
  logits: Float32Array; // [N, V]
  targets: Int32Array; // [N] target of each row, < 0 where none
  n: number;
  v: number;
  temperature: number;
  topP: number;
}): void {
  if (!(temperature > 0)) throw new Error(`the sampling transform needs temperature > 0, got ${temperature}`);
  if (temperature === 1 && topP >= 1) return;
  const weights = topP < 1 ? new Float64Array(v) : null;
  const order = topP < 1 ? new Int32Array(v) : null;
  for (let r = 0; r < n; r++) {
    const o = r * v;
    if (temperature !== 1) for (let j = 0; j < v; j++) logits[o + j] = logits[o + j]! / temperature;
    if (!weights || !order) continue;
    let mx = -Infinity;
    for (let j = 0; j < v; j++) mx = Math.max(mx, logits[o + j]!);
    let total = 0;
    for (let j = 0; j < v; j++) total += weights[j] = Math.exp(logits[o + j]! - mx);
    const { kept } = topPCut({ weights, order, v, total, topP });
    const t = targets[r]!;
    for (let j = kept; j < v; j++) if (order[j] !== t) logits[o + order[j]!] = OUTSIDE_NUCLEUS_LOGIT;
  }
}

/** The transform's backward on dL/d(transformed logits), in place: dz = du / T (masked rows carry 0 already). */
export function temperatureBackward({
  dlogits,
  n,
  v,
  temperature,
}: {
  dlogits: Float32Array; // [N, V]
  n: number;
  v: number;
  temperature: number;
}): void {
  if (temperature === 1) return;
  for (let i = 0; i < n * v; i++) dlogits[i] = dlogits[i]! / temperature;
}
