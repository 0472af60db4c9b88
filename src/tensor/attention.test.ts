import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { attentionBackward, attentionForward, attentionLayout } from './attention.ts';

/** Naive float64 causal attention for one sequence: the oracle. */
function naive(qkv: Float32Array, row: number, l: number, h: number, d: number): Float64Array {
  const c = h * d;
  const out = new Float64Array(l * c);
  for (let hh = 0; hh < h; hh++) {
    for (let i = 0; i < l; i++) {
      const s: number[] = [];
      for (let j = 0; j <= i; j++) {
        let dot = 0;
        for (let e = 0; e < d; e++)
          dot += qkv[(row + i) * 3 * c + hh * d + e]! * qkv[(row + j) * 3 * c + c + hh * d + e]!;
        s.push(dot / Math.sqrt(d));
      }
      const mx = Math.max(...s);
      const ex = s.map((x) => Math.exp(x - mx));
      const z = ex.reduce((a, b) => a + b, 0);
      for (let j = 0; j <= i; j++) {
        for (let e = 0; e < d; e++)
          out[i * c + hh * d + e]! += (ex[j]! / z) * qkv[(row + j) * 3 * c + 2 * c + hh * d + e]!;
      }
    }
  }
  return out;
}

// The second layout crosses the 64-row causal blocks (including a partial last block).
describe.each([[[3, 1, 5]], [[70, 130]]])('causal attention over packed sequences %j', (lengths) => {
  const h = 2,
    d = 4,
    c = h * d;
  const n = lengths.reduce((a, b) => a + b, 0);
  const maxLen = Math.max(...lengths);
  const layout = attentionLayout({ lengths, nHeads: h });

  it('matches a naive float64 oracle per sequence', () => {
    const rng = new Rng(7);
    const qkv = randomBuffer(rng, n * 3 * c);
    const out = new Float32Array(n * c);
    attentionForward({ out, probs: new Float32Array(layout.probSize), qkv, layout, nHeads: h, headDim: d });
    let maxDiff = 0;
    for (let s = 0; s < lengths.length; s++) {
      const ref = naive(qkv, layout.starts[s]!, lengths[s]!, h, d);
      for (let i = 0; i < ref.length; i++)
        maxDiff = Math.max(maxDiff, Math.abs(ref[i]! - out[layout.starts[s]! * c + i]!));
    }
    expect(maxDiff).toBeLessThan(1e-5);
  });

  it('backward matches finite differences', () => {
    const rng = new Rng(8);
    const qkv = randomBuffer(rng, n * 3 * c);
    const w = randomBuffer(rng, n * c);
    const out = new Float32Array(n * c);
    const probs = new Float32Array(layout.probSize);
    const loss = () => {
      attentionForward({ out, probs, qkv, layout, nHeads: h, headDim: d });
      return dot64(out, w);
    };
    loss();
    const dqkv = new Float32Array(n * 3 * c);
    attentionBackward({
      dqkv,
      dout: w,
      qkv,
      probs,
      scratch: new Float32Array(h * maxLen * maxLen),
      layout,
      nHeads: h,
      headDim: d,
    });
    const r = finiteDiffCheck({ x: qkv, analytic: dqkv, loss, rng, maxProbes: 400 });
    console.log(`attention fd rel err ${r.relError.toExponential(2)}`);
    expect(r.relError).toBeLessThan(5e-3);
  });
});
