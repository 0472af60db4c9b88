import type { Histogram } from './event-proto.ts';

/** Buckets per histogram: TensorBoard's own summary writers default to 30 as well. */
export const HISTOGRAM_BUCKETS = 30;

/**
 * A histogram of the finite values, in `buckets` equal-width buckets from the smallest to the
 * largest (one bucket when they are all equal); null when there are none, since TensorBoard has
 * nothing to draw for an empty one. Bucket i counts the values in [min + i w, min + (i + 1) w),
 * the last one its upper edge included, as summary.proto's HistogramProto reads.
 */
export function histogramOf(values: Iterable<number>, buckets = HISTOGRAM_BUCKETS): Histogram | null {
  const xs = [...values].filter(Number.isFinite);
  if (xs.length === 0) return null;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let sumSquares = 0;
  for (const x of xs) {
    min = Math.min(min, x);
    max = Math.max(max, x);
    sum += x;
    sumSquares += x * x;
  }
  const k = max > min ? buckets : 1;
  const width = (max - min) / k;
  const bucket = new Array<number>(k).fill(0);
  for (const x of xs) bucket[Math.min(k - 1, Math.floor((x - min) / (width || 1)))]!++;
  const bucketLimit = bucket.map((_, i) => (i === k - 1 ? max : min + (i + 1) * width));
  return { min, max, num: xs.length, sum, sumSquares, bucketLimit, bucket };
}
