import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { ropeBackward, ropeForward, ropeFrequencies, ropeTable } from './rope.ts';

describe('rope', () => {
  const table = ropeTable({ maxPositions: 16, headDim: 8, theta: 10000 });

  it('leaves position 0 unchanged and preserves norms', () => {
    const rng = new Rng(4);
    const x = randomBuffer(rng, 2 * 16);
    const before = x.slice();
    ropeForward({ x, n: 2, nHeads: 2, rowStride: 16, offset: 0, positions: new Int32Array([0, 7]), table });
    for (let i = 0; i < 16; i++) expect(x[i]).toBeCloseTo(before[i]!, 6);
    expect(
      Math.abs(dot64(x.subarray(16), x.subarray(16)) - dot64(before.subarray(16), before.subarray(16))),
    ).toBeLessThan(1e-4);
  });

  it('rotates pair (i, i + D/2) by pos * theta^(-2i/D), Hugging Face layout', () => {
    const x = new Float32Array(8);
    x[1] = 1; // pair (1, 5)
    ropeForward({ x, n: 1, nHeads: 1, rowStride: 8, offset: 0, positions: new Int32Array([3]), table });
    const ang = 3 * Math.pow(10000, -2 / 8);
    expect(x[1]).toBeCloseTo(Math.cos(ang), 6);
    expect(x[5]).toBeCloseTo(Math.sin(ang), 6);
  });

  it('backward matches finite differences (strided rows)', () => {
    const rng = new Rng(5);
    const n = 3,
      stride = 24; // q part of a [N, 3C] row with C = 16 (2 heads of 8), offset 8
    const x = randomBuffer(rng, n * stride);
    const w = randomBuffer(rng, n * stride);
    const positions = new Int32Array([2, 9, 15]);
    const args = { n, nHeads: 2, rowStride: stride, offset: 4, positions, table };
    const loss = () => {
      const y = x.slice();
      ropeForward({ x: y, ...args });
      return dot64(y, w);
    };
    const g = w.slice();
    ropeBackward({ x: g, ...args });
    const r = finiteDiffCheck({ x, analytic: g, loss, rng });
    expect(r.relError).toBeLessThan(5e-3);
  });

  it('scales frequencies as transformers does: linear, llama3 by wavelength, yarn by a ramp with a magnitude', () => {
    const base = ropeFrequencies({ headDim: 8, theta: 10000 }).freqs; // 1, 0.1, 0.01, 0.001
    [1, 0.1, 0.01, 0.001].forEach((f, i) => expect(base[i]).toBeCloseTo(f, 12));
    const lin = ropeFrequencies({ headDim: 8, theta: 10000, scaling: { type: 'linear', factor: 4 } });
    lin.freqs.forEach((f, i) => expect(f).toBeCloseTo(base[i]! / 4, 12));
    // Wavelengths 2π/f = 6.3, 63, 628, 6283 against old = 100: high-freq bound 25, low-freq bound 100.
    const l3 = ropeFrequencies({
      headDim: 8,
      theta: 10000,
      scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 100 },
    }).freqs;
    expect(l3[0]).toBeCloseTo(base[0]!, 12); // short wavelength: kept
    const smooth = (100 / ((2 * Math.PI) / base[1]!) - 1) / 3;
    expect(l3[1]).toBeCloseTo((1 - smooth) * (base[1]! / 8) + smooth * base[1]!, 12); // in between: blended
    expect(l3[2]).toBeCloseTo(base[2]! / 8, 12); // long wavelength: divided
    const y = ropeFrequencies({
      headDim: 8,
      theta: 10000,
      scaling: { type: 'yarn', factor: 4, originalMaxPositions: 64, betaFast: 32, betaSlow: 1 },
    });
    expect(y.magnitude).toBeCloseTo(1 + 0.1 * Math.log(4), 12);
    expect(y.freqs[0]).toBeCloseTo(base[0]!, 12); // fast dims keep their frequency
    expect(y.freqs[3]).toBeCloseTo(base[3]! / 4, 12); // slow dims are interpolated
    const t = ropeTable({
      maxPositions: 4,
      headDim: 8,
      theta: 10000,
      scaling: { type: 'yarn', factor: 4, originalMaxPositions: 64, betaFast: 32, betaSlow: 1 },
    });
    expect(Math.hypot(t.cos[4]!, t.sin[4]!)).toBeCloseTo(y.magnitude, 6);
  });
});
