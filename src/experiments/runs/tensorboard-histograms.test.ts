import { describe, expect, it } from 'vitest';
import { HISTOGRAM_TAGS, iterationHistograms } from './tensorboard-histograms.ts';

describe("an iteration's histograms", () => {
  it('splits the generated tokens’ advantages by segment kind and counts each summary’s tokens', () => {
    const hs = iterationHistograms({
      segments: [
        { kind: 'execution', lossMask: [0, 1, 1, 0, 1] },
        { kind: 'summary', lossMask: [0, 0, 1, 1, 1] },
        { kind: 'execution', lossMask: [0, 1] },
        { kind: 'summary', lossMask: [0, 1] },
      ],
      // Mask-0 positions hold values that must not be counted (99).
      advantages: [
        [99, 1, 2, 99, 3],
        [99, 99, -0.5, -0.5, 0.5],
        [99, 4],
        [99, 0.25],
      ],
    });
    const by = Object.fromEntries(hs.map((h) => [h.tag, h.histogram]));
    expect(Object.keys(by)).toEqual([HISTOGRAM_TAGS.execution, HISTOGRAM_TAGS.summary, HISTOGRAM_TAGS.summaryLength]);
    expect(by[HISTOGRAM_TAGS.execution]).toMatchObject({ min: 1, max: 4, num: 4, sum: 10 });
    expect(by[HISTOGRAM_TAGS.summary]).toMatchObject({ min: -0.5, max: 0.5, num: 4, sum: -0.25 });
    expect(by[HISTOGRAM_TAGS.summaryLength]).toMatchObject({ min: 1, max: 3, num: 2, sum: 4 });
  });

  it('leaves out what has no values: a batch without compaction has no summary histograms', () => {
    const hs = iterationHistograms({ segments: [{ kind: 'execution', lossMask: [1] }], advantages: [[0.5]] });
    expect(hs.map((h) => h.tag)).toEqual([HISTOGRAM_TAGS.execution]);
  });
});
