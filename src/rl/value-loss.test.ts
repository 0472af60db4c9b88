import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { valueLoss, valueLossToken } from './value-loss.ts';
import { aggregateLoss, aggregationWeights } from './aggregate-loss.ts';

const f32 = (xs: number[]): Float32Array => Float32Array.from(xs);
const u8 = (xs: number[]): Uint8Array => Uint8Array.from(xs);

describe('value loss 0.5 max((V-G)^2, (clip(V, Vold±eps)-G)^2) (method §5)', () => {
  it('inside the clip range both terms agree', () => {
    const r = valueLossToken({ value: 0.55, oldValue: 0.5, target: 1, valueClip: 0.2 });
    expect(r.loss).toBeCloseTo(0.5 * 0.45 ** 2, 12);
    expect(r.grad).toBeCloseTo(-0.45, 12);
  });
  it('V moved past the clip, away from G: the clipped term is larger and has no gradient', () => {
    // Vold = 0.5, G = 0.6, V = 0.1 -> clip(V) = 0.3: (0.3-0.6)^2 = 0.09 < (0.1-0.6)^2 = 0.25 -> unclipped wins.
    const a = valueLossToken({ value: 0.1, oldValue: 0.5, target: 0.6, valueClip: 0.2 });
    expect(a.loss).toBeCloseTo(0.5 * 0.25, 12);
    expect(a.grad).toBeCloseTo(-0.5, 12);
    // Vold = 0.5, G = 0.0, V = 0.0 (moved onto G) -> clip(V) = 0.3: 0.09 > 0 -> clipped wins, grad 0.
    const b = valueLossToken({ value: 0, oldValue: 0.5, target: 0, valueClip: 0.2 });
    expect(b.loss).toBeCloseTo(0.5 * 0.09, 12);
    expect(b.grad).toBe(0);
  });
  it('valueClip null: plain 0.5 (V-G)^2', () => {
    const r = valueLossToken({ value: 0, oldValue: 0.5, target: 0, valueClip: null });
    expect(r.loss).toBe(0);
  });
  it('is 0 outside the mask and names bad input', () => {
    const t = valueLoss({
      values: [f32([3, 1])],
      oldValues: [f32([0, 1])],
      returns: [f32([0, 2])],
      masks: [u8([0, 1])],
      valueClip: 0.2,
    });
    expect(t.perToken[0]![0]).toBe(0);
    expect(t.perToken[0]![1]).toBeCloseTo(0.5, 6);
    expect(() =>
      valueLoss({
        values: [f32([1])],
        oldValues: [f32([1, 2])],
        returns: [f32([1])],
        masks: [u8([1])],
        valueClip: 0.2,
      }),
    ).toThrow(/oldValues vs mask/);
    expect(() =>
      valueLoss({ values: [f32([1])], oldValues: [f32([1])], returns: [f32([1])], masks: [u8([1])], valueClip: -1 }),
    ).toThrow(/valueClip/);
  });

  it('finite differences: d(token-mean value loss)/d values matches the closed form', () => {
    const h = 1e-3;
    fc.assert(
      fc.property(
        fc.array(
          fc.array(
            fc
              .record({
                v: fc.double({ min: -2, max: 2, noNaN: true }),
                old: fc.double({ min: -2, max: 2, noNaN: true }),
                g: fc.double({ min: -2, max: 2, noNaN: true }),
                m: fc.boolean(),
              })
              .filter((c) => {
                // Stay away from kinks: |V - Vold| = eps, and (outside the clip) the tie between the branches.
                const vc = Math.min(Math.max(c.v, c.old - 0.3), c.old + 0.3);
                const inside = Math.abs(c.v - c.old) < 0.3 - 0.01;
                return (
                  inside ||
                  (Math.abs(c.v - c.old) > 0.3 + 0.01 && Math.abs(Math.abs(c.v - c.g) - Math.abs(vc - c.g)) > 0.01)
                );
              }),
            { minLength: 1, maxLength: 5 },
          ),
          { minLength: 1, maxLength: 3 },
        ),
        (batch) => {
          const eps = 0.3;
          const masks = batch.map((s) => u8(s.map((c) => (c.m ? 1 : 0))));
          const opts = {
            oldValues: batch.map((s) => f32(s.map((c) => c.old))),
            returns: batch.map((s) => f32(s.map((c) => c.g))),
            masks,
            valueClip: eps,
          };
          const base = batch.map((s) => s.map((c) => c.v));
          const L = (v: number[][]): number =>
            aggregateLoss({ perToken: valueLoss({ ...opts, values: v.map(f32) }).perToken, masks, mode: 'token-mean' });
          const grad = valueLoss({ ...opts, values: base.map(f32) }).gradValues;
          const w = aggregationWeights({ masks, mode: 'token-mean' });
          base.forEach((seg, s) =>
            seg.forEach((_, t) => {
              const bump = (d: number): number[][] =>
                base.map((x, i) => (i === s ? x.map((v, j) => (j === t ? v + d : v)) : x));
              const fd = (L(bump(h)) - L(bump(-h))) / (2 * h);
              expect(Math.abs(fd - w[s]![t]! * grad[s]![t]!)).toBeLessThan(2e-3);
            }),
          );
        },
      ),
      { numRuns: 60 },
    );
  });
});
