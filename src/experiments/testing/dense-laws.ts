import fc from 'fast-check';
import { expect } from 'vitest';
import { WordTokenizer } from '../../model/tokenizer/tokenizer.ts';
import type { DensePart } from '../../env/family.ts';

/**
 * The laws every family's dense generator keeps (its test calls this): the same seed gives the
 * same text, and every word is in the tokenizer's closed vocabulary (encode throws otherwise).
 */
export function checkDenseDeterministicAndClosed(dense: (seed: number) => DensePart[]): void {
  const tok = new WordTokenizer();
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1_000_000 }), (seed) => {
      const a = dense(seed);
      expect(a).toEqual(dense(seed));
      for (const p of a) expect(() => tok.encode(p.text)).not.toThrow();
    }),
    { numRuns: 40 },
  );
}
