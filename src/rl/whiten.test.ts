import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { maskedWhiten } from './whiten.ts';

describe('maskedWhiten (method §4 option)', () => {
  it('hand case: mean and unbiased std over masked tokens of all segments together', () => {
    // masked values 1, 2, 3 -> mean 2, sample variance 1.
    const out = maskedWhiten({
      values: [Float32Array.from([1, 50]), Float32Array.from([2, 3])],
      masks: [Uint8Array.from([1, 0]), Uint8Array.from([1, 1])],
    });
    expect(out[0]![0]).toBeCloseTo(-1, 6);
    expect(out[0]![1]).toBe(0);
    expect(out[1]![0]).toBeCloseTo(0, 6);
    expect(out[1]![1]).toBeCloseTo(1, 6);
  });

  it('one or zero masked tokens give zeros, never NaN', () => {
    expect(
      Array.from(maskedWhiten({ values: [Float32Array.from([5, 7])], masks: [Uint8Array.from([0, 1])] })[0]!),
    ).toEqual([0, 0]);
    expect(Array.from(maskedWhiten({ values: [Float32Array.from([5])], masks: [Uint8Array.from([0])] })[0]!)).toEqual([
      0,
    ]);
  });

  it('property: masked outputs have mean 0 and sample std 1 (when not constant); unmasked are 0', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.array(fc.record({ v: fc.float({ min: -10, max: 10, noNaN: true }), m: fc.boolean() }), {
            minLength: 1,
            maxLength: 6,
          }),
          { minLength: 1, maxLength: 4 },
        ),
        (batch) => {
          const values = batch.map((s) => Float32Array.from(s, (c) => c.v));
          const masks = batch.map((s) => Uint8Array.from(s, (c) => (c.m ? 1 : 0)));
          const xs = batch
            .flat()
            .filter((c) => c.m)
            .map((c) => c.v);
          const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
          fc.pre(xs.length >= 2 && xs.some((x) => Math.abs(x - mean) > 1e-2));
          const out = maskedWhiten({ values, masks });
          const ys = out.flatMap((o, s) => Array.from(o).filter((_, t) => masks[s]![t] === 1));
          const ym = ys.reduce((a, b) => a + b, 0) / ys.length;
          const yv = ys.reduce((a, y) => a + (y - ym) ** 2, 0) / (ys.length - 1);
          expect(Math.abs(ym)).toBeLessThan(1e-4);
          expect(Math.abs(Math.sqrt(yv) - 1)).toBeLessThan(1e-3);
          out.forEach((o, s) => o.forEach((y, t) => masks[s]![t] === 0 && expect(y).toBe(0)));
        },
      ),
    );
  });
});
