import { describe, expect, it } from 'vitest';
import { nativeOps } from '../../tensor/native-ops.ts';
import { Rng } from '../../util/random.ts';
import { drawRows, drawScratch, drawToken } from './sampling.ts';

const requireNative = process.env.CRL_REQUIRE_NATIVE === '1';

/**
 * The native row draw (sampling.ts drawRows at temperature 1 or 0, top-p 1) against drawToken row
 * by row: drawToken's formulas in double with a vectorized exp (a few ulp from Math.exp) and
 * eight-lane sums, so the same tokens (a draw would have to fall within ~1e-15 of a boundary to
 * differ), log-probs and entropies within 1e-12, and the rng left where drawToken leaves it.
 */
describe.skipIf(!nativeOps?.drawRows && !requireNative)('native drawRows vs drawToken', () => {
  it('is available', () => expect(nativeOps?.drawRows).toBeTruthy());

  for (const temperature of [1, 0])
    it(`draws the same tokens, log-probs and entropies to 1e-12 at temperature ${temperature}`, () => {
      const v = 3001;
      const n = 9;
      const src = new Rng(11);
      const logits = Float32Array.from({ length: n * v }, () => (src.next() - 0.5) * 16);
      logits[2 * v + 5] = -Infinity; // a masked id
      for (let j = 0; j < v; j++) logits[4 * v + j] = 0.25; // a flat row: the draw's scan decides alone
      const a = new Rng(3);
      const b = new Rng(3);
      const rows = Array.from({ length: n }, (_, i) => i);
      for (let rep = 0; rep < 5; rep++) {
        const fast = drawRows({ logits, rows, v, temperature, topP: 1, rng: a, scratch: drawScratch(v) });
        const scratch = drawScratch(v);
        const slow = rows.map((r) => drawToken({ logits, offset: r * v, v, temperature, topP: 1, rng: b, scratch }));
        expect(fast.map((d) => d.token)).toEqual(slow.map((d) => d.token));
        fast.forEach((d, i) => {
          expect(Math.abs(d.logprob - slow[i]!.logprob)).toBeLessThan(1e-12);
          expect(Math.abs(d.entropy - slow[i]!.entropy)).toBeLessThan(1e-12 * Math.max(1, slow[i]!.entropy));
        });
      }
      expect(a.next()).toBe(b.next());
    });

  it('leaves other settings and skipped rows to drawToken, with the same draws', () => {
    const v = 50;
    const src = new Rng(5);
    const logits = Float32Array.from({ length: 3 * v }, () => src.next() * 4);
    for (const [rows, temperature, topP] of [
      [[0, 2], 1, 1],
      [[0, 1, 2], 0.7, 1],
      [[0, 1, 2], 1, 0.9],
    ] as const) {
      const a = new Rng(8);
      const b = new Rng(8);
      const scratch = drawScratch(v);
      const fast = drawRows({ logits, rows, v, temperature, topP, rng: a, scratch });
      const slow = rows.map((r) => drawToken({ logits, offset: r * v, v, temperature, topP, rng: b, scratch }));
      expect(fast).toEqual(slow);
    }
  });
});
