import { describe, expect, it } from 'vitest';
import type { Environment } from '../../contracts/index.ts';
import { getFamily } from '../../env/registry.ts';
import type { TaskFamily } from '../../env/family.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { Rng } from '../../util/random.ts';
import { expertEpisodes } from './sft-data.ts';

/** chunk-sum whose environments count how many episodes are open at once (reset to close). */
function countingFamily(limit: number | undefined): { family: TaskFamily; peak: () => number } {
  const base = getFamily('chunk-sum');
  let open = 0;
  let peak = 0;
  const family: TaskFamily = {
    ...base,
    ...(limit === undefined ? {} : { maxConcurrentEpisodes: limit }),
    create: (knobs) => {
      const env: Environment = base.create(knobs);
      let counted = false;
      return {
        name: env.name,
        reset: (seed, o) => {
          if (!counted) [counted, open, peak] = [true, open + 1, Math.max(peak, open + 1)];
          return env.reset(seed, o);
        },
        step: (action, o) => env.step(action, o),
        close: async () => {
          if (counted) [counted, open] = [false, open - 1];
          await env.close?.();
        },
      };
    },
  };
  return { family, peak: () => peak };
}

describe('expertEpisodes', () => {
  it("runs at most the family's maxConcurrentEpisodes at once, and all at once without it", async () => {
    const tokenizer = loadTokenizer('word');
    const { config: rollout, layout } = resolveRolloutConfig({ input: {}, tokenizer });
    const run = async (limit: number | undefined) => {
      const c = countingFamily(limit);
      const { episodes: records } = await expertEpisodes({
        family: c.family,
        knobs: {},
        rollout,
        layout,
        tokenizer,
        lossyP: 0,
        episodes: 8,
        seeds: c.family.trainSeeds,
        rng: new Rng(1),
        idPrefix: 't',
      });
      expect(records).toHaveLength(8);
      expect(records.every((r) => r.reward >= 1)).toBe(true);
      return c.peak();
    };
    expect(await run(2)).toBe(2);
    expect(await run(undefined)).toBe(8);
  });
});
