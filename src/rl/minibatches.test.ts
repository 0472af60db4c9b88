import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildMinibatches, packByTokens } from './minibatches.ts';
import { Rng } from '../util/random.ts';

describe('minibatches by token budget from whole segments (method §6)', () => {
  it('hand case: greedy packing, an over-budget segment alone', () => {
    expect(packByTokens({ lengths: [3, 4, 2, 10, 1], tokenBudget: 7 })).toEqual([[0, 1], [2], [3], [4]]);
  });

  it('property: every segment exactly once; budget respected unless a segment is alone', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 20 }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer(),
        (lengths, budget, seed) => {
          const mbs = buildMinibatches({ lengths, tokenBudget: budget, rng: new Rng(seed) });
          expect(mbs.flat().sort((a, b) => a - b)).toEqual(lengths.map((_, i) => i));
          for (const mb of mbs) {
            const used = mb.reduce((a, i) => a + lengths[i]!, 0);
            if (mb.length > 1) expect(used).toBeLessThanOrEqual(budget);
          }
        },
      ),
    );
  });

  it('is reproducible from the seed and shuffles', () => {
    const lengths = Array.from({ length: 20 }, () => 1);
    const a = buildMinibatches({ lengths, tokenBudget: 100, rng: new Rng(7) });
    const b = buildMinibatches({ lengths, tokenBudget: 100, rng: new Rng(7) });
    expect(a).toEqual(b);
    expect(a[0]).not.toEqual(lengths.map((_, i) => i));
  });

  it('rejects a bad budget', () => {
    expect(() => packByTokens({ lengths: [1], tokenBudget: 0 })).toThrow(/tokenBudget/);
  });
});
