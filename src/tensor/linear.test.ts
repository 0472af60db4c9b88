import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { linearBackward, linearForward } from './linear.ts';

describe('linear (HF [out, in] weights)', () => {
  it('forward is inp @ W^T and backward matches finite differences', () => {
    const rng = new Rng(12);
    const n = 5,
      inF = 7,
      outF = 3;
    const inp = randomBuffer(rng, n * inF);
    const weight = randomBuffer(rng, outF * inF);
    const w = randomBuffer(rng, n * outF);
    const out = new Float32Array(n * outF);
    const loss = () => {
      linearForward({ out, inp, weight, n, inF, outF });
      return dot64(out, w);
    };
    loss();
    expect(out[1 * outF + 2]).toBeCloseTo(dot64(inp.subarray(inF, 2 * inF), weight.subarray(2 * inF, 3 * inF)), 4);
    const dinp = new Float32Array(n * inF);
    const dweight = new Float32Array(outF * inF);
    linearBackward({ dinp, dweight, dout: w, inp, weight, n, inF, outF });
    expect(finiteDiffCheck({ x: inp, analytic: dinp, loss, rng }).relError).toBeLessThan(5e-3);
    expect(finiteDiffCheck({ x: weight, analytic: dweight, loss, rng }).relError).toBeLessThan(5e-3);
  });
});
