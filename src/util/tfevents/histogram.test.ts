import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent } from './event-proto.ts';
import { histogramOf } from './histogram.ts';

describe('histograms for TensorBoard', () => {
  it('counts every finite value once, in equal-width buckets from min to max', () => {
    const h = histogramOf([0, 1, 2, 3, 4, 10, Number.NaN, Infinity], 5)!;
    expect(h).toMatchObject({ min: 0, max: 10, num: 6, sum: 20, sumSquares: 130 });
    expect(h.bucketLimit).toEqual([2, 4, 6, 8, 10]);
    expect(h.bucket).toEqual([2, 2, 1, 0, 1]); // [0, 2): 0, 1; [2, 4): 2, 3; [4, 6): 4; ...; [8, 10]: 10
  });

  it('puts equal values in one bucket, and gives nothing for no values', () => {
    expect(histogramOf([3, 3, 3])).toEqual({
      ...{ min: 3, max: 3, num: 3, sum: 9, sumSquares: 27 },
      ...{ bucketLimit: [3], bucket: [3] },
    });
    expect(histogramOf([Number.NaN])).toBeNull();
    expect(histogramOf([])).toBeNull();
  });

  it('round-trips through a tensorflow.Event as HistogramProto (histo = 5), doubles kept exact', () => {
    const histogram = histogramOf([-0.1, 0.25, 0.3, 7.5], 3)!;
    const bytes = encodeEvent({ wallTime: 2, step: 4, values: [{ tag: 'advantages/summary', histogram }] });
    // In the value, after its tag (0x0a, 18 bytes), histo is field 5, length-delimited (0x2a).
    const tag = Buffer.from('advantages/summary').toString('hex');
    expect(Buffer.from(bytes).toString('hex')).toContain(`0a12${tag}2a`);
    expect(decodeEvent(bytes)).toEqual({ wallTime: 2, step: 4, values: [{ tag: 'advantages/summary', histogram }] });
  });
});
