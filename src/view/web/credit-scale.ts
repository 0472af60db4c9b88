import type { CreditArrays } from '../api-schema.ts';

/** What the credit view colours generated tokens by (method §4–6 quantities the update used). */
export type CreditMetric = 'used' | 'advantage' | 'return' | 'value' | 'oldLogprob' | 'entropy' | 'ratio';

export interface MetricDef {
  id: CreditMetric;
  label: string;
  /** Diverging around a centre (0, or 1 for the ratio on a log scale) or sequential. */
  diverging: boolean;
}

export const CREDIT_METRICS: readonly MetricDef[] = [
  { id: 'used', label: 'advantage the update used (whitened)', diverging: true },
  { id: 'advantage', label: 'A_hat (cross-trajectory factor, before whitening)', diverging: true },
  { id: 'return', label: 'return G (critic target)', diverging: true },
  { id: 'value', label: 'value V (old critic)', diverging: true },
  { id: 'oldLogprob', label: 'old log-prob', diverging: false },
  { id: 'entropy', label: 'entropy', diverging: false },
  { id: 'ratio', label: 'ratio pi_new / pi_old after the update (log scale)', diverging: true },
];

/** The values to colour for one segment, or null when it has none of this metric. */
export function metricValues(c: CreditArrays, metric: CreditMetric): number[] | null {
  return c[metric];
}

/** The plotted number: the ratio on a log scale, so 1/2 and 2 are equally far from "unchanged". */
export function plotted(v: number, metric: CreditMetric): number {
  return metric === 'ratio' ? Math.log(v) : v;
}

/** Scale for an episode: max |x| (diverging) or [min, max] (sequential) over every plotted value. */
export function scaleOf(values: readonly number[], metric: CreditMetric): { lo: number; hi: number } {
  const xs = values.map((v) => plotted(v, metric)).filter(Number.isFinite);
  if (xs.length === 0) return { lo: 0, hi: 1 };
  const def = CREDIT_METRICS.find((m) => m.id === metric)!;
  if (def.diverging) {
    const m = Math.max(1e-12, ...xs.map(Math.abs));
    return { lo: -m, hi: m };
  }
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return { lo, hi: hi > lo ? hi : lo + 1 };
}

const POS: readonly [number, number, number] = [0, 150, 70]; // green: credit for this token
const NEG: readonly [number, number, number] = [215, 40, 40]; // red: blame
const SEQ: readonly [number, number, number] = [110, 60, 190]; // purple: sequential metrics

/**
 * A token's background: diverging metrics are green above the centre and red below, with opacity
 * growing linearly in |x| / max |x|; sequential metrics are purple with opacity from lo to hi.
 */
export function creditColour(v: number, metric: CreditMetric, scale: { lo: number; hi: number }): string {
  const x = plotted(v, metric);
  const def = CREDIT_METRICS.find((m) => m.id === metric)!;
  let rgb: readonly [number, number, number];
  let t: number;
  if (def.diverging) {
    rgb = x >= 0 ? POS : NEG;
    t = Math.min(1, Math.abs(x) / scale.hi);
  } else {
    rgb = SEQ;
    t = Math.min(1, Math.max(0, (x - scale.lo) / (scale.hi - scale.lo)));
  }
  const alpha = Math.round((0.08 + 0.8 * t) * 1000) / 1000;
  return `rgba(${rgb[0]}, ${rgb[1]}, ${rgb[2]}, ${alpha})`;
}
