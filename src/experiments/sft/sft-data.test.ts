import { describe, expect, it } from 'vitest';
import type { Environment } from '../../contracts/index.ts';
import { getFamily } from '../../env/registry.ts';
import type { TaskFamily } from '../../env/family.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { Rng } from '../../util/random.ts';
import { expertEpisodes, toSequences } from './sft-data.ts';

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

describe('toSequences in the tools format', () => {
  // The held-out rates (sft-heldout.ts) read these kinds: in the tools format the text format's
  // `answer` word never occurs, so answers went unmeasured, and a summary's span held its thinking
  // block, so no summary counted as exact.
  it("labels each turn's thinking block, the answer tool's call and the summary after its thinking", async () => {
    const tokenizer = loadTokenizer('qwen3');
    const family = getFamily('kv-ledger');
    const { config: rollout, layout } = resolveRolloutConfig({
      input: overFamilySizes(family.rollout, { agentFormat: 'tools', thinking: true, maxWindows: 4 }),
      tokenizer,
      tools: family.tools!,
    });
    const { episodes: records } = await expertEpisodes({
      family,
      knobs: { chunks: 12, minChunks: 8 },
      rollout,
      layout,
      tokenizer,
      lossyP: 0,
      episodes: 6,
      seeds: family.evalSeeds,
      rng: new Rng(3),
      idPrefix: 't',
    });
    expect(records.reduce((n, r) => n + r.compactions, 0)).toBeGreaterThan(0);
    const text = (ids: Int32Array) => tokenizer.tokenizer.decode(Array.from(ids));
    const spans = { answer: [] as string[], summary: [] as string[], reasoning: [] as string[] };
    for (const s of toSequences({ records, layout })) {
      let at = 0;
      while (at < s.tokens.length) {
        const kind = s.kinds![at]!;
        let end = at;
        while (end < s.tokens.length && s.kinds![end] === kind) end++;
        if (kind === 'answer' || kind === 'summary' || kind === 'reasoning')
          spans[kind].push(text(s.tokens.subarray(at, end)));
        at = end;
      }
    }
    expect(spans.answer).toHaveLength(records.length);
    for (const a of spans.answer)
      expect(a).toMatch(/^<tool_call>\n\{"name": "answer", "arguments": \{"values": \[.+\]\}\}\n<\/tool_call>$/);
    expect(spans.summary.length).toBeGreaterThan(0);
    for (const x of spans.summary) expect(x).toMatch(/^queries [^<]*<\|im_end\|>$/);
    expect(spans.reasoning.every((x) => x.startsWith('<think>\n') && x.endsWith('</think>\n\n'))).toBe(true);
  }, 60_000);
});
