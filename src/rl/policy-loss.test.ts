import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { policyLoss, surrogateToken } from './policy-loss.ts';
import { aggregateLoss, aggregationWeights, type LossAggregation } from './aggregate-loss.ts';

const f32 = (xs: number[]): Float32Array => Float32Array.from(xs);
const u8 = (xs: number[]): Uint8Array => Uint8Array.from(xs);
const clip = { clipLow: 0.2, clipHigh: 0.28 };

describe('surrogateToken: clipped surrogate with separate eps_low / eps_high (method §5)', () => {
  it('inside the clip range: loss -rho A, gradient -rho A', () => {
    const r = surrogateToken({ logprob: Math.log(1.1), oldLogprob: 0, advantage: 2, ...clip });
    expect(r.loss).toBeCloseTo(-2.2, 12);
    expect(r.grad).toBeCloseTo(-2.2, 12);
    expect(r.clipped).toBe(false);
  });
  it('A > 0 and rho above 1 + eps_high: clipped at 1.28, no gradient', () => {
    const r = surrogateToken({ logprob: Math.log(1.5), oldLogprob: 0, advantage: 1, ...clip });
    expect(r.loss).toBeCloseTo(-1.28, 12);
    expect(r.grad).toBe(0);
    expect(r.clipped).toBe(true);
  });
  it('A > 0 and rho below 1 - eps_low: the unclipped term is the min, gradient flows', () => {
    const r = surrogateToken({ logprob: Math.log(0.5), oldLogprob: 0, advantage: 1, ...clip });
    expect(r.loss).toBeCloseTo(-0.5, 12);
    expect(r.grad).toBeCloseTo(-0.5, 12);
  });
  it('A < 0 and rho below 1 - eps_low: clipped at 0.8, no gradient', () => {
    const r = surrogateToken({ logprob: Math.log(0.5), oldLogprob: 0, advantage: -1, ...clip });
    expect(r.loss).toBeCloseTo(0.8, 12);
    expect(r.grad).toBe(0);
    expect(r.clipped).toBe(true);
  });
  it('A < 0 and rho above 1 + eps_high: unclipped (pessimistic) term kept', () => {
    const r = surrogateToken({ logprob: Math.log(2), oldLogprob: 0, advantage: -1, ...clip });
    expect(r.loss).toBeCloseTo(2, 12);
    expect(r.grad).toBeCloseTo(2, 12);
  });
});

describe('policyLoss', () => {
  it('KL (k3) and entropy terms: hand case', () => {
    const d = 0.3; // logp_old - logp
    const t = policyLoss({
      logprobs: [f32([0, -1.3])],
      oldLogprobs: [f32([0, -1])],
      advantages: [f32([0, 0])],
      entropies: [f32([0, 0.7])],
      masks: [u8([0, 1])],
      ...clip,
      klCoef: 0.5,
      entropyCoef: 0.1,
    });
    expect(t.perToken[0]![1]).toBeCloseTo(0.5 * (Math.exp(d) - d - 1) - 0.1 * 0.7, 6);
    expect(t.gradLogprobs[0]![1]).toBeCloseTo(0.5 * (1 - Math.exp(d)), 6);
    expect(t.gradEntropies[0]![1]).toBeCloseTo(-0.1, 6);
    expect(t.perToken[0]![0]).toBe(0);
    expect(t.approxKl[0]![1]).toBeCloseTo(Math.exp(-d) - 1 + d, 6);
  });

  it('property: with ratio 1 the policy loss equals minus the mean advantage (both modes when counts match)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.array(
            fc.record({
              a: fc.float({ min: -3, max: 3, noNaN: true }),
              lp: fc.float({ min: -5, max: 0, noNaN: true }),
              m: fc.boolean(),
            }),
            { minLength: 1, maxLength: 6 },
          ),
          { minLength: 1, maxLength: 4 },
        ),
        (batch) => {
          const logprobs = batch.map((s) => f32(s.map((c) => c.lp)));
          const advantages = batch.map((s) => f32(s.map((c) => c.a)));
          const masks = batch.map((s) => u8(s.map((c) => (c.m ? 1 : 0))));
          const t = policyLoss({
            logprobs,
            oldLogprobs: logprobs,
            advantages,
            masks,
            ...clip,
            klCoef: 0.3,
            entropyCoef: 0,
          });
          const counted = batch
            .flat()
            .filter((c) => c.m)
            .map((c) => c.a);
          const meanA = counted.length ? counted.reduce((x, y) => x + y, 0) / counted.length : 0;
          expect(aggregateLoss({ perToken: t.perToken, masks, mode: 'token-mean' })).toBeCloseTo(-meanA, 5);
          t.clipped.forEach((c) => c.forEach((x) => expect(x).toBe(0)));
        },
      ),
    );
  });

  it('finite differences: d(aggregated loss)/d logprobs and d/d entropies match the closed form', () => {
    const h = 1e-3;
    fc.assert(
      fc.property(
        fc.array(
          fc.array(
            fc
              .record({
                a: fc.double({ min: -2, max: 2, noNaN: true }),
                old: fc.double({ min: -3, max: -0.1, noNaN: true }),
                dl: fc.double({ min: -0.6, max: 0.6, noNaN: true }),
                ent: fc.double({ min: 0, max: 2, noNaN: true }),
                m: fc.boolean(),
                // Keep rho away from the clip kinks, where the derivative is not defined.
              })
              .filter((c) => Math.abs(Math.exp(c.dl) - 0.8) > 0.02 && Math.abs(Math.exp(c.dl) - 1.28) > 0.02),
            { minLength: 1, maxLength: 5 },
          ),
          { minLength: 1, maxLength: 3 },
        ),
        fc.constantFrom<LossAggregation>('token-mean', 'segment-mean'),
        (batch, mode) => {
          const masks = batch.map((s) => u8(s.map((c) => (c.m ? 1 : 0))));
          const oldLogprobs = batch.map((s) => f32(s.map((c) => c.old)));
          const base = batch.map((s) => s.map((c) => c.old + c.dl));
          const ents = batch.map((s) => s.map((c) => c.ent));
          const opts = {
            oldLogprobs,
            advantages: batch.map((s) => f32(s.map((c) => c.a))),
            masks,
            ...clip,
            klCoef: 0.2,
            entropyCoef: 0.05,
          };
          const L = (lp: number[][], en: number[][]): number =>
            aggregateLoss({
              perToken: policyLoss({ ...opts, logprobs: lp.map(f32), entropies: en.map(f32) }).perToken,
              masks,
              mode,
            });
          const terms = policyLoss({ ...opts, logprobs: base.map(f32), entropies: ents.map(f32) });
          const w = aggregationWeights({ masks, mode });
          base.forEach((seg, s) =>
            seg.forEach((_, t) => {
              const bump = (arr: number[][], d: number): number[][] =>
                arr.map((x, i) => (i === s ? x.map((v, j) => (j === t ? v + d : v)) : x));
              const fdLp = (L(bump(base, h), ents) - L(bump(base, -h), ents)) / (2 * h);
              const fdEnt = (L(base, bump(ents, h)) - L(base, bump(ents, -h))) / (2 * h);
              expect(Math.abs(fdLp - w[s]![t]! * terms.gradLogprobs[s]![t]!)).toBeLessThan(2e-3);
              expect(Math.abs(fdEnt - w[s]![t]! * terms.gradEntropies[s]![t]!)).toBeLessThan(2e-3);
            }),
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('bad input names the problem', () => {
    const base = {
      logprobs: [f32([0])],
      oldLogprobs: [f32([0])],
      advantages: [f32([1])],
      masks: [u8([1])],
      ...clip,
      klCoef: 0,
      entropyCoef: 0,
    };
    expect(() => policyLoss({ ...base, clipLow: -1 })).toThrow(/clipLow/);
    expect(() => policyLoss({ ...base, entropyCoef: 0.1 })).toThrow(/entropies/);
    expect(() => policyLoss({ ...base, advantages: [f32([1, 2])] })).toThrow(/advantages vs mask/);
  });
});
