import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { swigluBackward, swigluForward } from './swiglu.ts';

describe('swiglu', () => {
  it('computes silu(gate) * up', () => {
    const inp = new Float32Array([1, -2, 3, 0.5]); // one row, F = 2: gate [1, -2], up [3, 0.5]
    const out = new Float32Array(2);
    swigluForward({ out, sig: new Float32Array(2), inp, n: 1, f: 2 });
    expect(out[0]).toBeCloseTo((1 / (1 + Math.exp(-1))) * 3, 6);
    expect(out[1]).toBeCloseTo((-2 / (1 + Math.exp(2))) * 0.5, 6);
  });

  it('backward matches finite differences', () => {
    const rng = new Rng(3);
    const n = 3,
      f = 10;
    const inp = randomBuffer(rng, n * 2 * f, 2);
    const w = randomBuffer(rng, n * f);
    const out = new Float32Array(n * f);
    const sig = new Float32Array(n * f);
    const loss = () => {
      swigluForward({ out, sig, inp, n, f });
      return dot64(out, w);
    };
    loss();
    const dinp = new Float32Array(n * 2 * f);
    swigluBackward({ dinp, dout: w, inp, sig, n, f });
    const g = finiteDiffCheck({ x: inp, analytic: dinp, loss, rng });
    console.log(`swiglu fd rel err ${g.relError.toExponential(2)}`);
    expect(g.relError).toBeLessThan(5e-3);
  });
});
