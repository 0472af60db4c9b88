import { describe, expect, it } from 'vitest';
import { modelConfig } from '../network/config.ts';
import { PolicyModel } from '../network/policy.ts';
import { topLogprobs } from './top-logprobs.ts';
import { DEFAULT_OPTIMIZER } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';

describe('topLogprobs', () => {
  const policy = new PolicyModel({
    config: modelConfig('tiny', { vocabSize: 40, maxSeqLen: 32 }),
    optim: DEFAULT_OPTIMIZER,
    rng: new Rng(11),
  });
  const seq = [3, 17, 5, 9, 21, 2, 30, 7];

  it("matches the policy's teacher-forced logprobs, and ranks the top k in order", () => {
    const forward = policy.forward([Int32Array.from(seq)]).logprobs[0]!; // [T], index t predicts seq[t]
    const got = topLogprobs({ policy, seq, from: 1, k: 5 });
    expect(got).toHaveLength(seq.length - 1);
    let maxDiff = 0;
    got.forEach((p, i) => {
      maxDiff = Math.max(maxDiff, Math.abs(p.logprob - forward[i + 1]!));
      expect(p.top).toHaveLength(5);
      for (let j = 1; j < 5; j++) expect(p.top[j - 1]!.logprob).toBeGreaterThanOrEqual(p.top[j]!.logprob);
      // The target is either among the top 5 with the same logprob, or below the 5th.
      const hit = p.top.find((x) => x.id === seq[i + 1]);
      if (hit) expect(hit.logprob).toBeCloseTo(p.logprob, 6);
      else expect(p.logprob).toBeLessThanOrEqual(p.top[4]!.logprob);
    });
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it('the probabilities of the whole vocabulary sum to 1, and a later start reports the same numbers', () => {
    const all = topLogprobs({ policy, seq, from: 1, k: 40 });
    for (const p of all) expect(p.top.reduce((a, x) => a + Math.exp(x.logprob), 0)).toBeCloseTo(1, 5);
    const tail = topLogprobs({ policy, seq, from: 5, k: 3 });
    tail.forEach((p, i) => expect(p.logprob).toBeCloseTo(all[i + 4]!.logprob, 4));
    expect(topLogprobs({ policy, seq, from: 2, k: 0 }).map((p) => p.top)).toEqual(seq.slice(2).map(() => []));
  });
});
