import { describe, expect, it } from 'vitest';
import { recomputeOld } from './recompute-old.ts';
import { TabularCritic, TabularPolicy } from './testing/tabular-models.ts';

describe('recomputeOld: trainer-side old logprobs and the sampler mismatch (method §6)', () => {
  const policy = new TabularPolicy({ vocab: 3, lr: 0.1 });
  policy.logits.set([1, 0, -1, 0.5, 0.5, 0, 0, 0, 2]);
  const critic = new TabularCritic({ vocab: 3, lr: 0.1 });
  critic.table.set([0.1, 0.2, 0.3]);
  const tokens = [Int32Array.from([0, 1, 2, 2]), Int32Array.from([2, 0])];
  const lossMask = [Uint8Array.from([0, 1, 0, 1]), Uint8Array.from([0, 1])];

  it('returns the trainer forward (train: false) in the position convention, chunk size irrelevant', () => {
    const a = recomputeOld({
      segments: tokens.map((t, i) => ({ tokens: t, lossMask: lossMask[i]! })),
      policy,
      critic,
      batchTokens: 1,
    });
    const b = recomputeOld({
      segments: tokens.map((t, i) => ({ tokens: t, lossMask: lossMask[i]! })),
      policy,
      critic,
      batchTokens: 100,
    });
    expect(a.oldLogprobs[0]![1]).toBeCloseTo(policy.logprob(0, 1), 6);
    expect(a.oldLogprobs[0]![0]).toBe(0);
    expect(Array.from(a.oldValues![1]!)).toEqual([0, expect.closeTo(0.3, 6)]);
    expect(a.oldLogprobs.map((x) => Array.from(x))).toEqual(b.oldLogprobs.map((x) => Array.from(x)));
    expect(a.maxLogprobMismatch).toBe(0);
    expect(a.comparedTokens).toBe(0);
  });

  it('max |sampler - trainer| over generated tokens, per-generated-token or aligned logprobs, null skipped', () => {
    const exact = [policy.logprob(0, 1), policy.logprob(2, 2)];
    const segments = [
      { tokens: tokens[0]!, lossMask: lossMask[0]!, samplerLogprobs: [exact[0]! + 0.01, exact[1]! - 0.05] }, // one per generated token
      { tokens: tokens[1]!, lossMask: lossMask[1]!, samplerLogprobs: [99, null] }, // aligned with tokens; null skipped, 99 at t=0 ignored
    ];
    const r = recomputeOld({ segments, policy, batchTokens: 4 });
    expect(r.maxLogprobMismatch).toBeCloseTo(0.05, 5);
    expect(r.meanLogprobMismatch).toBeCloseTo(0.03, 5);
    expect(r.comparedTokens).toBe(2);
    expect(r.oldValues).toBeNull();
  });

  it('names a sampler log-prob array of the wrong length', () => {
    expect(() =>
      recomputeOld({
        segments: [{ tokens: tokens[0]!, lossMask: lossMask[0]!, samplerLogprobs: [1, 2, 3] }],
        policy,
        batchTokens: 4,
      }),
    ).toThrow(/samplerLogprobs has 3 entries; expected 4 \(one per token\) or 2/);
  });
});
