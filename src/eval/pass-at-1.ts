/**
 * Pass@1 with a 95% interval (method §8). See docs/decisions/0007-experiments.md for the choice.
 *
 * Pass@1 is the mean over tasks of each task's mean success over its n samples. Samples of one
 * task are correlated (an easy task passes every time), so treating all samples as independent
 * would understate the uncertainty. We use a Wilson score interval on the pooled rate with an
 * effective sample size from the cluster-robust variance of the task means:
 *   var_c  = sum_t (m_t - p)^2 / (T (T - 1))          (variance of the mean of T task means)
 *   n_eff  = p (1 - p) / var_c, clipped to [T, N]      (N = all samples)
 * Wilson stays inside [0, 1] and is well behaved at p = 0 or 1 (then n_eff = N), where a t
 * interval over task means would collapse to zero width.
 */

export interface PassAt1 {
  passAt1: number;
  low: number;
  high: number;
  /** Tasks (clusters). */
  tasks: number;
  /** All samples. */
  samples: number;
  /** Effective sample size used for the interval. */
  effectiveSamples: number;
}

/** Wilson score interval for a proportion p over n trials (z = 1.96 for 95%). */
export function wilsonInterval(options: { p: number; n: number; z?: number }): { low: number; high: number } {
  const { p, n } = options;
  const z = options.z ?? 1.959963984540054;
  if (!(n > 0)) throw new Error(`wilsonInterval needs n > 0, got ${n}`);
  if (!(p >= 0 && p <= 1)) throw new Error(`wilsonInterval needs p in [0, 1], got ${p}`);
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  return { low: Math.max(0, center - half), high: Math.min(1, center + half) };
}

/**
 * Pass@1 and its interval from per-task outcomes: `outcomes[t]` holds task t's sample scores in
 * [0, 1] (1 pass, 0 fail). Every task needs at least one sample; docs/method.md asks for n >= 4.
 */
export function passAt1(outcomes: readonly (readonly number[])[]): PassAt1 {
  const T = outcomes.length;
  if (T === 0) throw new Error('passAt1 needs at least one task');
  const means = outcomes.map((s, t) => {
    if (s.length === 0) throw new Error(`task ${t} has no samples`);
    for (const x of s) if (!(x >= 0 && x <= 1)) throw new Error(`task ${t} has a score outside [0, 1]: ${x}`);
    return s.reduce((a, b) => a + b, 0) / s.length;
  });
  const N = outcomes.reduce((a, s) => a + s.length, 0);
  const p = means.reduce((a, b) => a + b, 0) / T;
  let nEff = N;
  if (T > 1 && p > 0 && p < 1) {
    const varC = means.reduce((a, m) => a + (m - p) ** 2, 0) / (T * (T - 1));
    nEff = varC > 0 ? Math.min(N, Math.max(T, (p * (1 - p)) / varC)) : N;
  }
  const { low, high } = wilsonInterval({ p, n: nEff });
  return { passAt1: p, low: Math.min(low, p), high: Math.max(high, p), tasks: T, samples: N, effectiveSamples: nEff };
}
