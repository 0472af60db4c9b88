import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { aggregateLoss, aggregationWeights } from './aggregate-loss.ts';

const f32 = (xs: number[]): Float32Array => Float32Array.from(xs);
const u8 = (xs: number[]): Uint8Array => Uint8Array.from(xs);

describe('aggregateLoss (method §5)', () => {
  it('token-mean: one mean over every counted token of every segment', () => {
    const perToken = [f32([1, 2, 100]), f32([4])];
    const masks = [u8([1, 1, 0]), u8([1])];
    expect(aggregateLoss({ perToken, masks, mode: 'token-mean' })).toBeCloseTo((1 + 2 + 4) / 3, 12);
  });

  it('segment-mean: mean per segment, then over segments; empty segments are left out', () => {
    const perToken = [f32([1, 2, 100]), f32([4]), f32([7, 7])];
    const masks = [u8([1, 1, 0]), u8([1]), u8([0, 0])];
    expect(aggregateLoss({ perToken, masks, mode: 'segment-mean' })).toBeCloseTo((1.5 + 4) / 2, 12);
  });

  it('nothing counted gives 0, not NaN', () => {
    expect(aggregateLoss({ perToken: [f32([3])], masks: [u8([0])], mode: 'token-mean' })).toBe(0);
    expect(aggregateLoss({ perToken: [], masks: [], mode: 'segment-mean' })).toBe(0);
  });

  it('rejects an unknown mode and mismatched shapes with a named error', () => {
    expect(() => aggregateLoss({ perToken: [f32([1])], masks: [u8([1])], mode: 'seq-mean' as 'token-mean' })).toThrow(
      /token-mean, segment-mean/,
    );
    expect(() => aggregateLoss({ perToken: [f32([1, 2])], masks: [u8([1])], mode: 'token-mean' })).toThrow(/segment 0/);
    expect(() => aggregateLoss({ perToken: [f32([1])], masks: [], mode: 'token-mean' })).toThrow(
      /1 loss arrays but 0 masks/,
    );
  });

  const batchArb = fc.array(
    fc.array(fc.record({ x: fc.float({ min: -5, max: 5, noNaN: true }), m: fc.boolean() }), {
      minLength: 1,
      maxLength: 6,
    }),
    { minLength: 1, maxLength: 5 },
  );

  it('property: token-mean equals segment-mean when every segment counts the same number of tokens', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.float({ min: -5, max: 5, noNaN: true }), { minLength: 20, maxLength: 20 }),
        (k, nSeg, xs) => {
          const perToken = Array.from({ length: nSeg }, (_, s) => f32(xs.slice(s * k, s * k + k).concat([99])));
          const masks = Array.from({ length: nSeg }, () => u8([...new Array(k).fill(1), 0]));
          const a = aggregateLoss({ perToken, masks, mode: 'token-mean' });
          const b = aggregateLoss({ perToken, masks, mode: 'segment-mean' });
          expect(Math.abs(a - b)).toBeLessThanOrEqual(1e-9);
        },
      ),
    );
  });

  it('property: with unequal counts the two modes differ (segment means not all equal)', () => {
    // Segment 0 counts 1 token of value c, segment 1 counts 2 tokens of value d != c.
    fc.assert(
      fc.property(fc.integer({ min: -5, max: 5 }), fc.integer({ min: -5, max: 5 }), (c, d) => {
        fc.pre(c !== d);
        const perToken = [f32([c]), f32([d, d])];
        const masks = [u8([1]), u8([1, 1])];
        const tok = aggregateLoss({ perToken, masks, mode: 'token-mean' });
        const seg = aggregateLoss({ perToken, masks, mode: 'segment-mean' });
        expect(tok).toBeCloseTo((c + 2 * d) / 3, 9);
        expect(seg).toBeCloseTo((c + d) / 2, 9);
        expect(Math.abs(tok - seg)).toBeGreaterThan(1e-6);
      }),
    );
  });

  it('property: aggregationWeights are the gradient of aggregateLoss (loss = sum w * x)', () => {
    fc.assert(
      fc.property(
        batchArb,
        fc.constantFrom<'token-mean' | 'segment-mean'>('token-mean', 'segment-mean'),
        (batch, mode) => {
          const perToken = batch.map((seg) => f32(seg.map((c) => c.x)));
          const masks = batch.map((seg) => u8(seg.map((c) => (c.m ? 1 : 0))));
          const w = aggregationWeights({ masks, mode });
          let dot = 0;
          perToken.forEach((x, s) => x.forEach((v, t) => (dot += w[s]![t]! * v)));
          expect(Math.abs(dot - aggregateLoss({ perToken, masks, mode }))).toBeLessThanOrEqual(1e-5);
          masks.forEach((m, s) => m.forEach((mm, t) => mm === 0 && expect(w[s]![t]).toBe(0)));
        },
      ),
    );
  });
});
