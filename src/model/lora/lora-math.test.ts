import { describe, expect, it } from 'vitest';
import { dot64, finiteDiffCheck, maxRelDiff, randomBuffer } from '../../tensor/finite-diff.ts';
import { Rng } from '../../util/random.ts';
import { loraBackward, loraMerge, loraRowsBackward, type LoraShape } from './lora-math.ts';

const shape: LoraShape = { o: 6, i: 5, r: 3, scale: 8 / 3 };

/** W0 + s B A in f64, element by element: the oracle. */
function mergedF64(base: Float32Array, a: Float32Array, b: Float32Array, { o, i, r, scale }: LoraShape): Float64Array {
  const w = new Float64Array(o * i);
  for (let p = 0; p < o; p++)
    for (let q = 0; q < i; q++) {
      let s = 0;
      for (let k = 0; k < r; k++) s += b[p * r + k]! * a[k * i + q]!;
      w[p * i + q] = base[p * i + q]! + scale * s;
    }
  return w;
}

describe('loraMerge / loraBackward', () => {
  const rng = new Rng(11);
  const { o, i, r } = shape;
  const base = randomBuffer(rng, o * i);
  const a = randomBuffer(rng, r * i, 0.5);
  const b = randomBuffer(rng, o * r, 0.5);

  it('merges W0 + s B A to the f32 nearest the f64 sum', () => {
    const w = new Float32Array(o * i);
    loraMerge({ w, base, a, b, scratch: new Float32Array(o * i), shape });
    const want = mergedF64(base, a, b, shape);
    let worst = 0;
    for (let k = 0; k < w.length; k++) worst = Math.max(worst, Math.abs(w[k]! - want[k]!) / Math.abs(want[k]!));
    console.log(`loraMerge vs f64: max relative difference ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-6);
  });

  it('is the base exactly while B is zero (iteration 0 of a run)', () => {
    const w = new Float32Array(o * i);
    loraMerge({ w, base, a, b: new Float32Array(o * r), scratch: new Float32Array(o * i), shape });
    expect(Array.from(w)).toEqual(Array.from(base));
  });

  it('gives the gradients of A and B that finite differences give', () => {
    const g = randomBuffer(rng, o * i); // dLoss/dW of the probe loss sum(G * W)
    const w = new Float32Array(o * i);
    const scratch = new Float32Array(o * i);
    const loss = () => {
      loraMerge({ w, base, a, b, scratch, shape });
      return dot64(w, g);
    };
    const da = new Float32Array(r * i);
    const db = new Float32Array(o * r);
    loraBackward({ dw: g, a, b, da, db, shape });
    const ca = finiteDiffCheck({ x: a, analytic: da, loss, rng });
    const cb = finiteDiffCheck({ x: b, analytic: db, loss, rng });
    expect(ca.relError).toBeLessThan(1e-3);
    expect(cb.relError).toBeLessThan(1e-3);
    // Accumulates: a second call doubles the gradients.
    const da1 = Float32Array.from(da);
    loraBackward({ dw: g, a, b, da, db, shape });
    for (let k = 0; k < da.length; k++) expect(da[k]).toBeCloseTo(2 * da1[k]!, 5);
  });
});

describe('loraRowsBackward', () => {
  it('gives loraBackward of dW = dY^T X without forming dW, for a matrix inside a fused product', () => {
    const rng = new Rng(12);
    const { o, i, r } = shape;
    const n = 7;
    const ld = o + 4; // the matrix is columns [3, 3 + O) of a wider fused output
    const col = 3;
    const dout = randomBuffer(rng, n * ld);
    const inp = randomBuffer(rng, n * i);
    const a = randomBuffer(rng, r * i);
    const b = randomBuffer(rng, o * r);
    const dw = new Float32Array(o * i); // dY^T X over the matrix's columns
    for (let p = 0; p < o; p++)
      for (let q = 0; q < i; q++) {
        let s = 0;
        for (let row = 0; row < n; row++) s += dout[row * ld + col + p]! * inp[row * i + q]!;
        dw[p * i + q] = s;
      }
    const want = { da: new Float32Array(r * i), db: new Float32Array(o * r) };
    loraBackward({ dw, a, b, ...want, shape });
    const got = { da: new Float32Array(r * i), db: new Float32Array(o * r) };
    const t = new Float32Array(n * r);
    const u = new Float32Array(n * r);
    loraRowsBackward({ dout, ld, col, inp, a, b, ...got, t, u, n, shape });
    expect(maxRelDiff(got.da, want.da)).toBeLessThan(1e-5);
    expect(maxRelDiff(got.db, want.db)).toBeLessThan(1e-5);
  });
});
