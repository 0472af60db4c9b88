import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { causalSoftmaxBackward, causalSoftmaxForward } from './softmax.ts';

describe('causal softmax', () => {
  it('rows sum to one over the causal prefix and are zero after it', () => {
    const rng = new Rng(9);
    const l = 5;
    const x = randomBuffer(rng, 2 * l * l, 3);
    causalSoftmaxForward({ x, offset: 0, blocks: 2, l });
    for (let r = 0; r < 2 * l; r++) {
      const i = r % l;
      let s = 0;
      for (let j = 0; j < l; j++) {
        if (j > i) expect(x[r * l + j]).toBe(0);
        s += x[r * l + j]!;
      }
      expect(Math.abs(s - 1)).toBeLessThan(1e-6);
    }
  });

  it('backward matches finite differences', () => {
    const rng = new Rng(10);
    const l = 4;
    const scores = randomBuffer(rng, l * l);
    const w = randomBuffer(rng, l * l);
    const loss = () => {
      const p = scores.slice();
      causalSoftmaxForward({ x: p, offset: 0, blocks: 1, l });
      return dot64(p, w);
    };
    const probs = scores.slice();
    causalSoftmaxForward({ x: probs, offset: 0, blocks: 1, l });
    const grad = w.slice();
    causalSoftmaxBackward({ grad, gradOffset: 0, probs, probsOffset: 0, blocks: 1, l });
    expect(finiteDiffCheck({ x: scores, analytic: grad, loss, rng }).relError).toBeLessThan(5e-3);
  });
});
