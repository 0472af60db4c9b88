import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { drawScratch, drawToken } from './sampling.ts';
import { sampledLogprob } from '../network/sampling-transform.ts';

describe('drawToken', () => {
  const probs = [0.5, 0.3, 0.15, 0.05];
  const logits = Float32Array.from(probs, (p) => Math.log(p) + 3); // a shift changes nothing
  const v = probs.length;

  function frequencies(temperature: number, topP: number, draws = 20000): number[] {
    const rng = new Rng(1);
    const scratch = drawScratch(v);
    const counts = new Array(v).fill(0);
    for (let i = 0; i < draws; i++)
      counts[drawToken({ logits, offset: 0, v, temperature, topP, rng, scratch }).token]++;
    return counts.map((c) => c / draws);
  }

  it('reports the log-prob of the drawn-from distribution and the model entropy', () => {
    const d = drawToken({
      logits,
      offset: 0,
      v,
      temperature: 0.3,
      topP: 0.6,
      rng: new Rng(2),
      scratch: drawScratch(v),
    });
    // softmax(z / 0.3) is proportional to p^(1/0.3); top-p 0.6 keeps token 0 alone (0.84 of the mass).
    expect(d.token).toBe(0);
    expect(d.logprob).toBeCloseTo(0, 9);
    expect(d.entropy).toBeCloseTo(-probs.reduce((a, p) => a + p * Math.log(p), 0), 5);
  });

  it('samples the model distribution at temperature 1, top-p 1', () => {
    frequencies(1, 1).forEach((f, i) => expect(Math.abs(f - probs[i]!)).toBeLessThan(0.015));
  });

  it('top-p keeps the smallest set with mass >= p and renormalises it', () => {
    // cumulative 0.5, 0.8: p = 0.7 keeps tokens 0 and 1 with 0.5/0.8 and 0.3/0.8.
    const f = frequencies(1, 0.7);
    expect(Math.abs(f[0]! - 0.625)).toBeLessThan(0.015);
    expect(Math.abs(f[1]! - 0.375)).toBeLessThan(0.015);
    expect(f[2]! + f[3]!).toBe(0);
  });

  it('temperature reshapes the distribution as softmax(z / T)', () => {
    const t = 2;
    const w = probs.map((p) => Math.pow(p, 1 / t));
    const z = w.reduce((a, b) => a + b, 0);
    frequencies(t, 1).forEach((f, i) => expect(Math.abs(f - w[i]! / z)).toBeLessThan(0.015));
  });

  it('gives the entropy and log-prob of the direct formulas on a wide row, a masked logit included', () => {
    const rng = new Rng(7);
    const w = 5000;
    const row = Float32Array.from({ length: w }, () => (rng.next() - 0.5) * 20);
    row[17] = -Infinity; // a token outside the vocabulary, masked (tokenizer/vocab-map.ts)
    let mx = -Infinity;
    for (const z of row) mx = Math.max(mx, z);
    let s = 0;
    for (const z of row) s += Math.exp(z - mx);
    const lse = mx + Math.log(s);
    let h = 0;
    for (const z of row) if (z > -Infinity) h -= Math.exp(z - lse) * (z - lse);
    for (const temperature of [0, 1, 0.7]) {
      const d = drawToken({ logits: row, offset: 0, v: w, temperature, topP: 1, rng, scratch: drawScratch(w) });
      expect(d.token).not.toBe(17);
      expect(Math.abs(d.entropy - h)).toBeLessThan(1e-9 * h);
      const want =
        temperature === 0.7 ? sampledLogprob({ row, token: d.token, temperature, topP: 1 }) : row[d.token]! - lse;
      expect(Math.abs(d.logprob - want)).toBeLessThan(1e-9);
    }
  });
});
