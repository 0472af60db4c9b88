import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { dot64, finiteDiffCheck, randomBuffer } from './finite-diff.ts';
import { attentionBackward, attentionForward, attentionLayout } from './attention.ts';

/** Naive float64 causal attention for one sequence: the oracle. Query head hh reads kv head hh / (h / hkv). */
function naive(qkv: Float32Array, row: number, l: number, h: number, hkv: number, d: number): Float64Array {
  const c = h * d;
  const w = (h + 2 * hkv) * d;
  const out = new Float64Array(l * c);
  for (let hh = 0; hh < h; hh++) {
    const kv = Math.floor(hh / (h / hkv));
    for (let i = 0; i < l; i++) {
      const s: number[] = [];
      for (let j = 0; j <= i; j++) {
        let dot = 0;
        for (let e = 0; e < d; e++) dot += qkv[(row + i) * w + hh * d + e]! * qkv[(row + j) * w + c + kv * d + e]!;
        s.push(dot / Math.sqrt(d));
      }
      const mx = Math.max(...s);
      const ex = s.map((x) => Math.exp(x - mx));
      const z = ex.reduce((a, b) => a + b, 0);
      for (let j = 0; j <= i; j++) {
        for (let e = 0; e < d; e++)
          out[i * c + hh * d + e]! += (ex[j]! / z) * qkv[(row + j) * w + c + hkv * d + kv * d + e]!;
      }
    }
  }
  return out;
}

// The second layout crosses the 64-row causal blocks (including a partial last block); the last
// two are grouped-query attention (4 query heads on 2 and on 1 key/value heads).
describe.each([
  [[3, 1, 5], 2, 2],
  [[70, 130], 2, 2],
  [[70, 9], 4, 2],
  [[5, 66], 4, 1],
])('causal attention over packed sequences %j, %i heads, %i kv heads', (lengths, h, hkv) => {
  const d = 4,
    c = h * d,
    w = (h + 2 * hkv) * d;
  const n = lengths.reduce((a, b) => a + b, 0);
  const maxLen = Math.max(...lengths);
  const layout = attentionLayout({ lengths, nHeads: h });
  const heads = { nHeads: h, headDim: d, nKvHeads: hkv };

  it('matches a naive float64 oracle per sequence', () => {
    const rng = new Rng(7);
    const qkv = randomBuffer(rng, n * w);
    const out = new Float32Array(n * c);
    attentionForward({ out, probs: new Float32Array(layout.probSize), qkv, layout, ...heads });
    let maxDiff = 0;
    for (let s = 0; s < lengths.length; s++) {
      const ref = naive(qkv, layout.starts[s]!, lengths[s]!, h, hkv, d);
      for (let i = 0; i < ref.length; i++)
        maxDiff = Math.max(maxDiff, Math.abs(ref[i]! - out[layout.starts[s]! * c + i]!));
    }
    expect(maxDiff).toBeLessThan(1e-5);
  });

  it('backward matches finite differences', () => {
    const rng = new Rng(8);
    const qkv = randomBuffer(rng, n * w);
    const probe = randomBuffer(rng, n * c);
    const out = new Float32Array(n * c);
    const probs = new Float32Array(layout.probSize);
    const loss = () => {
      attentionForward({ out, probs, qkv, layout, ...heads });
      return dot64(out, probe);
    };
    loss();
    const dqkv = new Float32Array(n * w);
    attentionBackward({
      dqkv,
      dout: probe,
      qkv,
      probs,
      scratch: new Float32Array(h * maxLen * maxLen),
      layout,
      ...heads,
    });
    const r = finiteDiffCheck({ x: qkv, analytic: dqkv, loss, rng, maxProbes: 400 });
    console.log(`attention fd rel err ${r.relError.toExponential(2)}`);
    expect(r.relError).toBeLessThan(5e-3);
  });
});
