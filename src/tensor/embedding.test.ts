import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { embeddingBackward, embeddingForward } from './embedding.ts';

describe('embedding', () => {
  it('gathers rows and scatters gradients (repeated ids add up)', () => {
    const rng = new Rng(6);
    const v = 5,
      c = 4;
    const weight = randomBuffer(rng, v * c);
    const tokens = new Int32Array([3, 1, 3]);
    const out = new Float32Array(3 * c);
    const w = randomBuffer(rng, 3 * c);
    const loss = () => {
      embeddingForward({ out, tokens, weight, n: 3, c });
      return dot64(out, w);
    };
    loss();
    expect(Array.from(out.subarray(0, c))).toEqual(Array.from(weight.subarray(3 * c, 4 * c)));
    const dweight = new Float32Array(v * c);
    embeddingBackward({ dweight, dout: w, tokens, n: 3, c });
    expect(finiteDiffCheck({ x: weight, analytic: dweight, loss, rng }).relError).toBeLessThan(5e-3);
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() =>
      embeddingForward({
        out: new Float32Array(4),
        tokens: new Int32Array([9]),
        weight: new Float32Array(8),
        n: 1,
        c: 4,
      }),
    ).toThrow(/outside the vocabulary/);
  });
});
