import type { Histogram } from '../../util/tfevents/event-proto.ts';
import { histogramOf } from '../../util/tfevents/histogram.ts';

/** The histograms of one iteration, by tag (docs/tensorboard.md). */
export const HISTOGRAM_TAGS = {
  execution: 'advantages/execution',
  summary: 'advantages/summary',
  summaryLength: 'summaries/length_tokens',
} as const;

/**
 * The distributions a single number per iteration hides: the estimator's advantages of the
 * generated tokens, split by segment kind (method §4–5: a summary's tokens get credit only through
 * the cross-trajectory factor, so their spread is the thing to watch next to the execution
 * tokens'), and how many tokens each summary took. Over the whole batch, not only the sampled
 * episodes. A histogram with no values (no compaction this iteration) is left out.
 */
export function iterationHistograms(options: {
  segments: ReadonlyArray<{ kind: 'execution' | 'summary'; lossMask: ArrayLike<number> }>;
  /** [T] per segment: the estimator's advantage before whitening (values at mask-0 positions ignored). */
  advantages: ReadonlyArray<ArrayLike<number>>;
}): Array<{ tag: string; histogram: Histogram }> {
  const byKind = { execution: [] as number[], summary: [] as number[] };
  const summaryLengths: number[] = [];
  options.segments.forEach((s, i) => {
    const a = options.advantages[i]!;
    let generated = 0;
    for (let t = 0; t < s.lossMask.length; t++)
      if (s.lossMask[t] === 1) {
        byKind[s.kind].push(a[t]!);
        generated++;
      }
    if (s.kind === 'summary') summaryLengths.push(generated);
  });
  const all: Array<[string, number[]]> = [
    [HISTOGRAM_TAGS.execution, byKind.execution],
    [HISTOGRAM_TAGS.summary, byKind.summary],
    [HISTOGRAM_TAGS.summaryLength, summaryLengths],
  ];
  return all.flatMap(([tag, values]) => {
    const histogram = histogramOf(values);
    return histogram ? [{ tag, histogram }] : [];
  });
}
