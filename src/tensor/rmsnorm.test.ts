import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { rmsnormBackward, rmsnormForward } from './rmsnorm.ts';

describe('rmsnorm', () => {
  it('normalises rows to unit RMS before the gain', () => {
    const rng = new Rng(1);
    const n = 3,
      c = 8;
    const inp = randomBuffer(rng, n * c, 5);
    const out = new Float32Array(n * c);
    rmsnormForward({ out, rstd: new Float32Array(n), inp, weight: new Float32Array(c).fill(1), n, c, eps: 1e-6 });
    for (let r = 0; r < n; r++) {
      const ms = dot64(out.subarray(r * c, r * c + c), out.subarray(r * c, r * c + c)) / c;
      expect(Math.abs(ms - 1)).toBeLessThan(1e-4);
    }
  });

  it('backward matches finite differences', () => {
    const rng = new Rng(2);
    const n = 4,
      c = 12;
    const inp = randomBuffer(rng, n * c);
    const weight = randomBuffer(rng, c);
    const w = randomBuffer(rng, n * c);
    const out = new Float32Array(n * c);
    const rstd = new Float32Array(n);
    const loss = () => {
      rmsnormForward({ out, rstd, inp, weight, n, c, eps: 1e-5 });
      return dot64(out, w);
    };
    loss();
    const dinp = new Float32Array(n * c);
    const dweight = new Float32Array(c);
    rmsnormBackward({ dinp, dweight, dout: w, inp, weight, rstd, n, c });
    const gx = finiteDiffCheck({ x: inp, analytic: dinp, loss, rng });
    const gw = finiteDiffCheck({ x: weight, analytic: dweight, loss, rng });
    console.log(`rmsnorm fd rel err: inp ${gx.relError.toExponential(2)} weight ${gw.relError.toExponential(2)}`);
    expect(gx.relError).toBeLessThan(5e-3);
    expect(gw.relError).toBeLessThan(5e-3);
  });
});
