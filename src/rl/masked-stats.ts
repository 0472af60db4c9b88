/** Small masked reductions used for metrics. Computed in float64. */

/** Mean of x over mask = 1 across segments; 0 when nothing is masked. */
export function maskedMean(options: { values: ArrayLike<number>[]; masks: Uint8Array[] }): number {
  let n = 0;
  let sum = 0;
  options.values.forEach((v, s) => {
    const m = options.masks[s]!;
    for (let t = 0; t < m.length; t++)
      if (m[t] === 1) {
        n++;
        sum += v[t]!;
      }
  });
  return n > 0 ? sum / n : 0;
}

/** Number of mask = 1 positions across segments. */
export function maskedCount(masks: Uint8Array[]): number {
  let n = 0;
  for (const m of masks) for (let t = 0; t < m.length; t++) n += m[t] === 1 ? 1 : 0;
  return n;
}

/**
 * 1 - Var(G - V) / Var(G) over masked positions (population variances, as CleanRL). NaN when
 * Var(G) = 0 or nothing is masked: explained variance is undefined then, and 0 would mislead.
 */
export function explainedVariance(options: {
  predictions: Float32Array[];
  targets: Float32Array[];
  masks: Uint8Array[];
}): number {
  const { predictions, targets, masks } = options;
  const residuals = targets.map((g, s) => g.map((x, t) => x - predictions[s]![t]!));
  const varOf = (xs: ArrayLike<number>[]): number => {
    const mean = maskedMean({ values: xs, masks });
    return maskedMean({ values: xs.map((x) => Array.from(x, (v) => (v - mean) ** 2)), masks });
  };
  if (maskedCount(masks) === 0) return Number.NaN;
  const vg = varOf(targets);
  return vg === 0 ? Number.NaN : 1 - varOf(residuals) / vg;
}
