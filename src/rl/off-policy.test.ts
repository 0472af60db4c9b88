import { describe, expect, it } from 'vitest';
import { importanceStats, importanceWeights, type OffPolicyOptions } from './off-policy.ts';
import { policyLoss } from './policy-loss.ts';
import { parsePpoConfig } from './ppo-config.ts';

const f32 = (xs: number[]): Float32Array => Float32Array.from(xs);
const u8 = (xs: number[]): Uint8Array => Uint8Array.from(xs);
const clip = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entropyCoef: 0 };

/**
 * Three optimized tokens, old log-probs 0 (the trainer's), and one unmasked position:
 *   t0: logp = log 1.1, A =  2, behaviour -0.5 -> raw weight e^0.5 = 1.6487; rho inside the clip
 *   t1: logp = log 1.5, A =  1, behaviour -1   -> raw weight e^1   = 2.7183; rho clipped at 1.28
 *   t2: logp = log 2,   A = -1, behaviour  0.3 -> raw weight e^-0.3 = 0.7408; pessimistic branch
 *   t3: unmasked
 */
const case3 = {
  logprobs: [f32([Math.log(1.1), Math.log(1.5), Math.log(2), 0])],
  oldLogprobs: [f32([0, 0, 0, 0])],
  advantages: [f32([2, 1, -1, 0])],
  masks: [u8([1, 1, 1, 0])],
  behaviourLogprobs: [f32([-0.5, -1, 0.3, -9])],
};
const E05 = Math.exp(0.5);
const E03 = Math.exp(-0.3);

function lossWith(offPolicy?: OffPolicyOptions) {
  return policyLoss({ ...case3, ...clip, ...(offPolicy ? { offPolicy } : {}) });
}

describe('off-policy corrections of the surrogate (docs/async.md): hand-computed loss and gradient', () => {
  it('none leaves the loss and gradient exactly as without behaviour log-probs (method §5)', () => {
    const plain = lossWith();
    const none = lossWith({ correction: 'none', cap: 2, level: 'token' });
    expect(none.perToken).toEqual(plain.perToken);
    expect(none.gradLogprobs).toEqual(plain.gradLogprobs);
    expect(plain.perToken[0]![0]).toBeCloseTo(-2.2, 6);
    expect(plain.perToken[0]![1]).toBeCloseTo(-1.28, 6);
    expect(plain.perToken[0]![2]).toBeCloseTo(2, 6);
  });

  it('tis, token level: each surrogate times min(2, exp(old - b)), gradient scaled alike', () => {
    const t = lossWith({ correction: 'tis', cap: 2, level: 'token' });
    expect(t.perToken[0]![0]).toBeCloseTo(-2.2 * E05, 5);
    expect(t.gradLogprobs[0]![0]).toBeCloseTo(-2.2 * E05, 5);
    expect(t.perToken[0]![1]).toBeCloseTo(-1.28 * 2, 5); // truncated at the cap
    expect(t.gradLogprobs[0]![1]).toBe(0); // the clipped branch has no gradient, weighted or not
    expect(t.perToken[0]![2]).toBeCloseTo(2 * E03, 5);
    expect(t.gradLogprobs[0]![2]).toBeCloseTo(2 * E03, 5);
    expect(t.perToken[0]![3]).toBe(0);
    expect(t.gradLogprobs[0]![3]).toBe(0);
  });

  it('tis, sequence level: one weight min(cap, exp(sum(old - b))) for the whole segment', () => {
    // sum(old - b) over the masked tokens = 0.5 + 1 - 0.3 = 1.2 -> e^1.2 = 3.32, below cap 4
    const t = lossWith({ correction: 'tis', cap: 4, level: 'sequence' });
    const w = Math.exp(1.2);
    expect(t.perToken[0]![0]).toBeCloseTo(-2.2 * w, 5);
    expect(t.gradLogprobs[0]![0]).toBeCloseTo(-2.2 * w, 5);
    expect(t.perToken[0]![2]).toBeCloseTo(2 * w, 5);
    const capped = lossWith({ correction: 'tis', cap: 2, level: 'sequence' });
    expect(capped.perToken[0]![0]).toBeCloseTo(-2.2 * 2, 5);
    expect(capped.perToken[0]![2]).toBeCloseTo(2 * 2, 5);
  });

  it('decoupled: clip around the proximal (old) policy, weight exp(old - b), tokens above the cap left out', () => {
    const t = lossWith({ correction: 'decoupled', cap: 2, level: 'token' });
    expect(t.perToken[0]![0]).toBeCloseTo(-2.2 * E05, 5);
    expect(t.gradLogprobs[0]![0]).toBeCloseTo(-2.2 * E05, 5);
    expect(t.perToken[0]![1]).toBeCloseTo(0, 12); // weight e^1 > 2: dropped, not truncated
    expect(t.gradLogprobs[0]![1]).toBeCloseTo(0, 12);
    expect(t.perToken[0]![2]).toBeCloseTo(2 * E03, 5);
    expect(t.gradLogprobs[0]![2]).toBeCloseTo(2 * E03, 5);
    expect(t.clipped[0]![1]).toBe(1); // still counted by the clip fraction: rho = 1.5 is outside the trust region
  });

  it('the gradient matches central finite differences of the weighted loss (weights detached)', () => {
    for (const correction of ['tis', 'decoupled'] as const) {
      const offPolicy: OffPolicyOptions = { correction, cap: 2, level: 'token' };
      const at = (lp0: number) =>
        policyLoss({
          ...case3,
          ...clip,
          offPolicy,
          logprobs: [f32([lp0, Math.log(1.5), Math.log(2), 0])],
        });
      const h = 1e-3;
      const lp0 = Math.log(1.1);
      const fd = (at(lp0 + h).perToken[0]![0]! - at(lp0 - h).perToken[0]![0]!) / (2 * h);
      expect(Math.abs(fd - at(lp0).gradLogprobs[0]![0]!)).toBeLessThan(1e-3);
    }
  });

  it('a token without a behaviour log-prob (scripted sampler) keeps weight 1 and is not measured', () => {
    const [w] = importanceWeights({
      oldLogprobs: [f32([0, 0])],
      behaviourLogprobs: [f32([Number.NaN, -1])],
      masks: [u8([1, 1])],
      offPolicy: { correction: 'tis', cap: 2, level: 'token' },
    });
    expect(Array.from(w!.weights)).toEqual([1, 2]);
    expect(Number.isNaN(w!.raw[0]!)).toBe(true);
    expect(importanceStats([w!])).toEqual({ mean: Math.fround(Math.E), max: Math.fround(Math.E), cappedShare: 1 });
  });

  it('metrics: mean and max of the raw weights and the share the cap changed', () => {
    const ws = importanceWeights({
      oldLogprobs: case3.oldLogprobs,
      behaviourLogprobs: case3.behaviourLogprobs,
      masks: case3.masks,
      offPolicy: { correction: 'tis', cap: 2, level: 'token' },
    });
    const s = importanceStats(ws);
    expect(s.mean).toBeCloseTo((E05 + Math.E + E03) / 3, 5);
    expect(s.max).toBeCloseTo(Math.E, 5);
    expect(s.cappedShare).toBeCloseTo(1 / 3, 12);
  });

  it('refuses what cannot be computed, with the valid choices named', () => {
    expect(() => lossWith({ correction: 'bogus' as 'tis', cap: 2, level: 'token' })).toThrow(
      "unknown off-policy correction 'bogus'; valid: none, tis, decoupled",
    );
    expect(() => lossWith({ correction: 'tis', cap: 0, level: 'token' })).toThrow('cap must be a finite number > 0');
    expect(() =>
      policyLoss({
        ...case3,
        ...clip,
        behaviourLogprobs: [],
        offPolicy: { correction: 'tis', cap: 2, level: 'token' },
      }),
    ).toThrow('needs behaviourLogprobs');
    expect(() => parsePpoConfig({ offPolicy: 'decoupled', tisLevel: 'sequence' })).toThrow(
      "tisLevel 'sequence' applies to offPolicy 'tis' only",
    );
    expect(() => parsePpoConfig({ offPolicy: 'nope' })).toThrow('invalid PPO config');
  });
});
