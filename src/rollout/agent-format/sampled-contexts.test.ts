import { describe, expect, it } from 'vitest';
import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from '../../contracts/index.ts';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { Rng } from '../../util/random.ts';
import { overFamilySizes, resolveRolloutConfig } from '../config.ts';
import { runEpisodes } from '../runner.ts';
import { textPolicySampler } from '../text-policy-sampler.ts';

/**
 * The context a turn was sampled after is the context its record trains it on (method §3): for
 * every generation, some segment holds the request's prompt followed by the generated ids, with
 * those ids in its loss mask. A summary in the tools format was sampled after the window with its
 * reasoning while its segment held the window without it (the template drops reasoning before a
 * user query): the records equalled the template, but the policy had seen something else, and the
 * trainer's log-probs of its summaries were about 2.7 nats from the sampler's.
 */
describe('every sampled turn is trained on the context it was sampled after', () => {
  for (const thinking of [true, false])
    it(`kv-ledger's expert in the tools format, thinking ${thinking ? 'on' : 'off'}, with compactions`, async () => {
      const qwen3 = loadTokenizer('qwen3');
      const family = getFamily('kv-ledger');
      const { config, layout } = resolveRolloutConfig({
        tokenizer: qwen3,
        input: overFamilySizes(family.rollout, { agentFormat: 'tools', thinking, maxWindows: 4 }),
        tools: family.tools!,
      });
      const seen: { prompt: readonly number[]; tokens: readonly number[] }[] = [];
      const recording = (inner: TokenSampler): TokenSampler => ({
        sample: async (requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]> => {
          const results = await inner.sample(requests, params);
          requests.forEach((r, i) => seen.push({ prompt: r.prompt, tokens: results[i]!.tokens }));
          return results;
        },
      });
      const expert = (seed: number) =>
        recording(
          textPolicySampler({
            tokenizer: qwen3,
            policy: family.expert,
            rng: new Rng(seed),
            agent: layout.agent,
            reasoner: family.reasoner,
          }),
        );
      const records = await runEpisodes({
        episodes: Array.from({ length: 6 }, (_, i) => ({
          episodeId: `e${i}`,
          env: family.create({ chunks: 12, minChunks: 8 }),
          seed: 100 + i,
        })),
        config,
        layout,
        actor: expert(1),
        summarizer: expert(2),
      });
      expect(records.reduce((n, r) => n + r.compactions, 0)).toBeGreaterThan(0);
      const segments = records.flatMap((r) => r.segments);
      const missing = seen.filter(({ prompt, tokens }) => {
        const n = prompt.length;
        return !segments.some(
          (s) =>
            s.tokens.length >= n + tokens.length &&
            prompt.every((x, i) => s.tokens[i] === x) &&
            tokens.every((x, i) => s.tokens[n + i] === x && s.lossMask[n + i] === 1),
        );
      });
      expect(seen.length).toBeGreaterThan(20);
      expect(missing.map((m) => qwen3.tokenizer.decode(m.tokens).slice(0, 80))).toEqual([]);
    }, 120_000);
});
