/**
 * The one reduction every loss goes through (method §5), and the matching gradient weights.
 *
 * - 'token-mean' (the paper's): one mean over every counted token of every segment, so a long
 *   segment weighs in proportion to its tokens.
 * - 'segment-mean' (the ablation): mean inside each segment, then mean over segments. Segments with
 *   no counted token are left out of the outer mean (they have no mean to contribute).
 * With no counted token at all the loss is 0 and every weight is 0 (nothing to optimize).
 */
import { RlInputError, requireBinaryMask, requireSameLength } from './errors.ts';

export type LossAggregation = 'token-mean' | 'segment-mean';
export const LOSS_AGGREGATIONS: readonly LossAggregation[] = ['token-mean', 'segment-mean'];

function checkMode(mode: string): asserts mode is LossAggregation {
  if (!(LOSS_AGGREGATIONS as readonly string[]).includes(mode)) {
    throw new RlInputError(`unknown loss aggregation '${mode}'; valid: ${LOSS_AGGREGATIONS.join(', ')}`);
  }
}

/**
 * d(aggregate)/d(perToken[s][t]): the weight of each token in the reduction. // [T] per segment
 * aggregateLoss(x) == sum_s sum_t weights[s][t] * x[s][t] for every x.
 */
export function aggregationWeights(options: { masks: Uint8Array[]; mode: LossAggregation }): Float32Array[] {
  const { masks, mode } = options;
  checkMode(mode);
  masks.forEach((m, s) => requireBinaryMask(m, `masks[${s}]`));
  const counts = masks.map((m) => m.reduce((acc, x) => acc + x, 0));
  const total = counts.reduce((a, b) => a + b, 0);
  const nonEmpty = counts.filter((c) => c > 0).length;
  return masks.map((m, s) => {
    const w = new Float32Array(m.length);
    const c = counts[s]!;
    if (c === 0) return w;
    const perToken = mode === 'token-mean' ? 1 / total : 1 / (c * nonEmpty);
    for (let t = 0; t < m.length; t++) if (m[t] === 1) w[t] = perToken;
    return w;
  });
}

/** Reduces per-token losses to one number (method §5). Computed in float64. */
export function aggregateLoss(options: {
  perToken: Float32Array[]; // one array per segment // [T]
  masks: Uint8Array[]; // positions that count // [T]
  mode: LossAggregation;
}): number {
  const { perToken, masks, mode } = options;
  checkMode(mode);
  if (perToken.length !== masks.length) {
    throw new RlInputError(`aggregateLoss: ${perToken.length} loss arrays but ${masks.length} masks`);
  }
  perToken.forEach((x, s) =>
    requireSameLength({ a: x, b: masks[s]!, what: `aggregateLoss segment ${s} perToken vs mask` }),
  );
  masks.forEach((m, s) => requireBinaryMask(m, `masks[${s}]`));
  // Exact float64 sums (not the float32 weights) so the value matches a direct mean to ~1e-15.
  let total = 0;
  let count = 0;
  let segmentMeanSum = 0;
  let nonEmpty = 0;
  perToken.forEach((x, s) => {
    const m = masks[s]!;
    let segSum = 0;
    let segCount = 0;
    for (let t = 0; t < x.length; t++) {
      if (m[t] !== 1) continue;
      if (!Number.isFinite(x[t]!)) throw new RlInputError(`aggregateLoss: perToken[${s}][${t}] is ${x[t]}`);
      segSum += x[t]!;
      segCount++;
    }
    total += segSum;
    count += segCount;
    if (segCount > 0) {
      segmentMeanSum += segSum / segCount;
      nonEmpty++;
    }
  });
  if (mode === 'token-mean') return count === 0 ? 0 : total / count;
  return nonEmpty === 0 ? 0 : segmentMeanSum / nonEmpty;
}
