import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { headRmsnormBackward, headRmsnormForward } from './head-rmsnorm.ts';
import { rmsnormForward } from './rmsnorm.ts';

describe('headRmsnorm (per-head q/k RMSNorm inside q|k|v rows)', () => {
  const n = 3,
    h = 4,
    hkv = 2,
    d = 6,
    w = (h + 2 * hkv) * d;

  it('normalizes each q and k head like rmsnorm over D values; v passes through; in place gives the same', () => {
    const rng = new Rng(1);
    const inp = randomBuffer(rng, n * w, 3);
    const qWeight = randomBuffer(rng, d);
    const kWeight = randomBuffer(rng, d);
    const out = new Float32Array(n * w);
    const rstd = new Float32Array(n * (h + hkv));
    headRmsnormForward({ out, rstd, inp, qWeight, kWeight, n, h, hkv, d, eps: 1e-6 });
    for (let r = 0; r < n; r++) {
      for (let k = 0; k < h + hkv; k++) {
        const o = r * w + k * d;
        const ref = new Float32Array(d);
        const weight = k < h ? qWeight : kWeight;
        rmsnormForward({
          out: ref,
          rstd: new Float32Array(1),
          inp: inp.slice(o, o + d),
          weight,
          n: 1,
          c: d,
          eps: 1e-6,
        });
        for (let i = 0; i < d; i++) expect(Math.abs(out[o + i]! - ref[i]!)).toBeLessThan(1e-6);
      }
      for (let i = (h + hkv) * d; i < w; i++) expect(out[r * w + i]).toBe(inp[r * w + i]);
    }
    const inPlace = inp.slice();
    headRmsnormForward({ out: inPlace, rstd, inp: inPlace, qWeight, kWeight, n, h, hkv, d, eps: 1e-6 });
    expect(Array.from(inPlace)).toEqual(Array.from(out));
  });

  it('backward matches finite differences (input and both weights)', () => {
    const rng = new Rng(2);
    const inp = randomBuffer(rng, n * w);
    const qWeight = randomBuffer(rng, d);
    const kWeight = randomBuffer(rng, d);
    const probe = randomBuffer(rng, n * w);
    const out = new Float32Array(n * w);
    const rstd = new Float32Array(n * (h + hkv));
    const loss = () => {
      headRmsnormForward({ out, rstd, inp, qWeight, kWeight, n, h, hkv, d, eps: 1e-5 });
      return dot64(out, probe);
    };
    loss();
    const dinp = new Float32Array(n * w);
    const dqWeight = new Float32Array(d);
    const dkWeight = new Float32Array(d);
    headRmsnormBackward({ dinp, dqWeight, dkWeight, dout: probe, inp, qWeight, kWeight, rstd, n, h, hkv, d });
    const checks = [
      finiteDiffCheck({ x: inp, analytic: dinp, loss, rng }),
      finiteDiffCheck({ x: qWeight, analytic: dqWeight, loss, rng }),
      finiteDiffCheck({ x: kWeight, analytic: dkWeight, loss, rng }),
    ];
    console.log(`head rmsnorm fd rel err: ${checks.map((c) => c.relError.toExponential(2)).join(' ')}`);
    for (const c of checks) expect(c.relError).toBeLessThan(5e-3);
  });
});
