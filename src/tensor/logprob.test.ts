import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { logprobBackward, logprobForward } from './logprob.ts';

describe('log-prob and entropy head', () => {
  const n = 3,
    v = 6;
  const targets = new Int32Array([2, -1, 5]);

  function run(logits: Float32Array) {
    const probs = logits.slice();
    const logprobs = new Float32Array(n);
    const entropies = new Float32Array(n);
    logprobForward({ probs, targets, logprobs, entropies, n, v });
    return { probs, logprobs, entropies };
  }

  it('gives log-softmax at the target, 0 without a target, and the entropy', () => {
    const logits = new Float32Array(n * v);
    const { logprobs, entropies } = run(logits); // uniform
    expect(logprobs[0]).toBeCloseTo(-Math.log(v), 6);
    expect(logprobs[1]).toBe(0);
    expect(entropies[2]).toBeCloseTo(Math.log(v), 6);
  });

  it('backward of a mixed logprob + entropy loss matches finite differences', () => {
    const rng = new Rng(11);
    const logits = randomBuffer(rng, n * v, 2);
    const gl = randomBuffer(rng, n);
    const ge = randomBuffer(rng, n);
    const loss = () => {
      const { logprobs, entropies } = run(logits);
      let s = 0;
      for (let r = 0; r < n; r++) s += gl[r]! * (targets[r]! >= 0 ? logprobs[r]! : 0) + ge[r]! * entropies[r]!;
      return s;
    };
    const f = run(logits);
    const dlogits = new Float32Array(n * v);
    logprobBackward({ dlogits, probs: f.probs, targets, dlogprobs: gl, dentropies: ge, entropies: f.entropies, n, v });
    const r = finiteDiffCheck({ x: logits, analytic: dlogits, loss, rng, eps: 1e-2 });
    expect(r.relError).toBeLessThan(5e-3);
  });
});
