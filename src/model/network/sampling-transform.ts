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
 * The nucleus of unnormalized weights: writes its tokens to order[0, kept), highest weight first
 * (ties by id), and returns how many there are and their summed weight (the rest of `order` is
 * scratch). The nucleus is usually a small part of the vocabulary, so only the tokens above a
 * threshold are sorted: every token below it weighs less than every token above, so the nucleus
 * is a prefix of the sorted candidates whenever their mass reaches topP * total. The threshold
 * falls by 1e3 a round until it does, and to 0 (every token) at last, so the result is that of
 * sorting everything. At V = 151,936 (normal logits of sd 3, T = 0.7, top-p 0.9, a loaded 2-core
 * machine) sorting everything took 259 ms a row, this 10 ms.
 */
export function topPCut({
  weights,
  order,
  v,
  total,
  topP,
}: {
  weights: Float64Array; // [V] unnormalized probabilities
  order: Int32Array; // [V] out: order[0, kept) the nucleus, highest weight first
  v: number;
  total: number;
  topP: number;
}): { kept: number; mass: number } {
  let mx = 0;
  for (let j = 0; j < v; j++) mx = Math.max(mx, weights[j]!);
  const goal = topP * total;
  for (let round = 1; ; round++) {
    const tau = round <= 4 ? mx * 1e-3 ** round : 0;
    let c = 0;
    for (let j = 0; j < v; j++) if (weights[j]! >= tau) order[c++] = j;
    const sorted = Array.from(order.subarray(0, c)).sort((a, b) => weights[b]! - weights[a]! || a - b);
    let cum = 0;
    for (let j = 0; j < c; j++) {
      order[j] = sorted[j]!;
      cum += weights[sorted[j]!]!;
      if (cum >= goal) return { kept: j + 1, mass: cum };
    }
    if (tau === 0) return { kept: c, mass: cum }; // rounding kept the sum under topP * total: everything
  }
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
  const kept = topP < 1 ? new Uint8Array(v) : null; // [V] 1 on the row's nucleus
  for (let r = 0; r < n; r++) {
    const o = r * v;
    if (temperature !== 1) for (let j = 0; j < v; j++) logits[o + j] = logits[o + j]! / temperature;
    if (!weights || !order || !kept) continue;
    let mx = -Infinity;
    for (let j = 0; j < v; j++) mx = Math.max(mx, logits[o + j]!);
    let total = 0;
    for (let j = 0; j < v; j++) total += weights[j] = Math.exp(logits[o + j]! - mx);
    const cut = topPCut({ weights, order, v, total, topP });
    kept.fill(0);
    for (let j = 0; j < cut.kept; j++) kept[order[j]!] = 1;
    const t = targets[r]!;
    for (let j = 0; j < v; j++) if (kept[j] === 0 && j !== t) logits[o + j] = OUTSIDE_NUCLEUS_LOGIT;
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
