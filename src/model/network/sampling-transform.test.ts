import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { drawScratch, drawToken } from '../sampler/sampling.ts';
import {
  applySamplingTransform,
  OUTSIDE_NUCLEUS_LOGIT,
  sampledLogprob,
  temperatureBackward,
  topPCut,
} from './sampling-transform.ts';

const logSoftmax = (row: ArrayLike<number>): number[] => {
  const xs = Array.from(row);
  const mx = Math.max(...xs);
  const lse = mx + Math.log(xs.reduce((a, z) => a + Math.exp(z - mx), 0));
  return xs.map((z) => z - lse);
};

describe('sampledLogprob', () => {
  const probs = [0.5, 0.3, 0.15, 0.05];
  const row = probs.map((p) => Math.log(p) + 2);

  it('is log_softmax of the logits at temperature 1, top-p 1', () => {
    probs.forEach((p, t) =>
      expect(sampledLogprob({ row, token: t, temperature: 1, topP: 1 })).toBeCloseTo(Math.log(p), 12),
    );
  });

  it('is log_softmax(z / T) at top-p 1', () => {
    const w = probs.map((p) => p ** (1 / 0.7));
    const z = w.reduce((a, b) => a + b, 0);
    w.forEach((x, t) =>
      expect(sampledLogprob({ row, token: t, temperature: 0.7, topP: 1 })).toBeCloseTo(Math.log(x / z), 12),
    );
  });

  it('renormalizes over the nucleus and gives -Infinity outside it', () => {
    // cumulative 0.5, 0.8, 0.95: p = 0.7 keeps tokens 0 and 1.
    expect(sampledLogprob({ row, token: 0, temperature: 1, topP: 0.7 })).toBeCloseTo(Math.log(0.5 / 0.8), 12);
    expect(sampledLogprob({ row, token: 1, temperature: 1, topP: 0.7 })).toBeCloseTo(Math.log(0.3 / 0.8), 12);
    expect(sampledLogprob({ row, token: 2, temperature: 1, topP: 0.7 })).toBe(-Infinity);
    // A mass reached exactly keeps no more: 0.5 + 0.3 = 0.8.
    expect(sampledLogprob({ row: probs.map(Math.log), token: 2, temperature: 1, topP: 0.5 })).toBe(-Infinity);
  });

  it('applies temperature before the cut', () => {
    // At T = 0.5 the probabilities are proportional to p^2: 0.25, 0.09, 0.0225, 0.0025 (sum 0.365);
    // token 0 alone holds 0.685 of the mass, so top-p 0.6 keeps only it, where T = 1 would keep two.
    expect(sampledLogprob({ row, token: 0, temperature: 0.5, topP: 0.6 })).toBeCloseTo(0, 12);
    expect(sampledLogprob({ row, token: 1, temperature: 0.5, topP: 0.6 })).toBe(-Infinity);
  });
});

describe('topPCut', () => {
  it('breaks ties at the cut by the lower id', () => {
    // Tokens 1 and 3 tie at 0.3 behind token 2's 0.4: top-p 0.6 needs one of them, token 1.
    const weights = Float64Array.from([0.0, 0.3, 0.4, 0.3]);
    const order = new Int32Array(4);
    const { kept, mass } = topPCut({ weights, order, v: 4, total: 1, topP: 0.6 });
    expect(kept).toBe(2);
    expect(mass).toBeCloseTo(0.7, 12);
    expect(Array.from(order.subarray(0, kept))).toEqual([2, 1]);
    const row = Array.from(weights, (w) => Math.log(w));
    expect(sampledLogprob({ row, token: 1, temperature: 1, topP: 0.6 })).toBeCloseTo(Math.log(0.3 / 0.7), 12);
    expect(sampledLogprob({ row, token: 3, temperature: 1, topP: 0.6 })).toBe(-Infinity);
  });

  it('gives the prefix of the full sort, however small the nucleus or the weights', () => {
    const rng = new Rng(9);
    for (const spread of [0.5, 4, 40]) {
      const v = 3000;
      const weights = Float64Array.from({ length: v }, () => Math.exp(rng.normal() * spread));
      weights[5] = weights[6] = weights[7]!; // ties
      weights[9] = 0; // a masked token
      const total = weights.reduce((a, w) => a + w, 0);
      const full = Array.from({ length: v }, (_, j) => j).sort((a, b) => weights[b]! - weights[a]! || a - b);
      for (const topP of [0.1, 0.5, 0.9, 0.999, 1]) {
        const order = new Int32Array(v);
        const { kept, mass } = topPCut({ weights, order, v, total, topP });
        let cum = 0;
        let want = v;
        for (let j = 0; j < v; j++) {
          cum += weights[full[j]!]!;
          if (cum >= topP * total) {
            want = j + 1;
            break;
          }
        }
        expect(kept).toBe(want);
        expect(Array.from(order.subarray(0, kept))).toEqual(full.slice(0, kept));
        expect(mass).toBeCloseTo(cum, 9);
      }
    }
  });

  it('keeps everything at top-p 1', () => {
    const weights = Float64Array.from([0.1, 0.2, 0.7]);
    const { kept, mass } = topPCut({ weights, order: new Int32Array(3), v: 3, total: 1, topP: 1 });
    expect(kept).toBe(3);
    expect(mass).toBeCloseTo(1, 12);
  });
});

describe('drawToken records the log-prob of the distribution it drew from', () => {
  it('matches sampledLogprob on a wide row for every temperature and top-p', () => {
    const rng = new Rng(3);
    const v = 500;
    const row = Float32Array.from({ length: v }, () => (rng.next() - 0.5) * 8);
    for (const [temperature, topP] of [
      [1, 1],
      [0.7, 1],
      [1, 0.9],
      [0.7, 0.9],
      [1.5, 0.5],
    ] as const)
      for (let i = 0; i < 20; i++) {
        const d = drawToken({ logits: row, offset: 0, v, temperature, topP, rng, scratch: drawScratch(v) });
        const want = sampledLogprob({ row, token: d.token, temperature, topP });
        expect(want).toBeGreaterThan(-Infinity); // drawn from the nucleus
        expect(Math.abs(d.logprob - want)).toBeLessThan(1e-9);
      }
  });

  it('is log_softmax of the logits at temperature 1, top-p 1 and at greedy', () => {
    const rng = new Rng(4);
    const v = 64;
    const row = Float32Array.from({ length: v }, () => (rng.next() - 0.5) * 6);
    const lp = logSoftmax(row);
    for (const temperature of [1, 0]) {
      const d = drawToken({ logits: row, offset: 0, v, temperature, topP: 1, rng, scratch: drawScratch(v) });
      expect(Math.abs(d.logprob - lp[d.token]!)).toBeLessThan(1e-9);
    }
  });
});

describe('applySamplingTransform', () => {
  const rng = new Rng(5);
  const v = 40;
  const n = 3;
  const raw = Float32Array.from({ length: n * v }, () => (rng.next() - 0.5) * 6);

  it('leaves the logits bit for bit at temperature 1, top-p 1', () => {
    const logits = raw.slice();
    applySamplingTransform({ logits, targets: Int32Array.from([0, 1, 2]), n, v, temperature: 1, topP: 1 });
    expect(logits).toEqual(raw);
  });

  it('makes log_softmax equal the sampled log-prob of every token in the nucleus', () => {
    const logits = raw.slice();
    const targets = Int32Array.from([-1, -1, -1]); // a target outside the nucleus is kept: next test
    applySamplingTransform({ logits, targets, n, v, temperature: 0.7, topP: 0.9 });
    for (let r = 0; r < n; r++) {
      const lp = logSoftmax(logits.subarray(r * v, (r + 1) * v));
      const rawRow = raw.subarray(r * v, (r + 1) * v);
      let inNucleus = 0;
      for (let t = 0; t < v; t++) {
        const want = sampledLogprob({ row: rawRow, token: t, temperature: 0.7, topP: 0.9 });
        if (want === -Infinity) {
          expect(logits[r * v + t]).toBe(Math.fround(OUTSIDE_NUCLEUS_LOGIT));
          continue;
        }
        inNucleus++;
        expect(Math.abs(lp[t]! - want)).toBeLessThan(1e-5);
      }
      expect(inNucleus).toBeGreaterThan(1);
      expect(inNucleus).toBeLessThan(v);
    }
  });

  it('keeps a target outside the nucleus, scored over the nucleus plus itself', () => {
    const logits = Float32Array.from([0.5, 0.3, 0.15, 0.05].map(Math.log));
    applySamplingTransform({ logits, targets: Int32Array.from([3]), n: 1, v: 4, temperature: 1, topP: 0.7 });
    expect(logits[2]).toBe(Math.fround(OUTSIDE_NUCLEUS_LOGIT));
    expect(logSoftmax(logits)[3]).toBeCloseTo(Math.log(0.05 / 0.85), 6);
  });

  it('refuses temperature 0', () => {
    expect(() =>
      applySamplingTransform({ logits: raw.slice(), targets: new Int32Array(n), n, v, temperature: 0, topP: 1 }),
    ).toThrow(/temperature > 0/);
  });

  it('scales the gradient by 1 / T', () => {
    const d = Float32Array.from([0.7, -1.4]);
    temperatureBackward({ dlogits: d, n: 1, v: 2, temperature: 0.7 });
    expect(d[0]).toBeCloseTo(1, 6);
    expect(d[1]).toBeCloseTo(-2, 6);
  });
});
