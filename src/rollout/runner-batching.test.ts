import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { resolveRolloutConfig } from './config.ts';
import { InstructionTooLongError } from './episode-errors.ts';
import { runEpisodes } from './runner.ts';
import { randomTokenSampler, RandomEnv } from './testing/scripted.ts';
import type { SampleRequest, SamplingParams, TokenSampler } from '../contracts/index.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { stepLimit: 40 } });

/** Records the stages of every batch call, then delegates. */
function recording(inner: TokenSampler): TokenSampler & { batches: string[][] } {
  const batches: string[][] = [];
  return {
    batches,
    sample: (reqs: readonly SampleRequest[], p: SamplingParams) => {
      batches.push(reqs.map((r) => r.stage ?? '?'));
      return inner.sample(reqs, p);
    },
  };
}

const episodes = (n: number, instructionWords = 5) =>
  Array.from({ length: n }, (_, i) => ({
    episodeId: `e${i}`,
    env: new RandomEnv({ instructionWords, maxObservationWords: 40, doneProbability: 0.02 }),
    seed: i,
  }));

describe('runEpisodes batching', () => {
  it('puts every live episode in each call, acting and summarizing together, when one sampler serves both', async () => {
    const s = recording(randomTokenSampler({ tokenizer, rng: new Rng(3) }));
    const records = await runEpisodes({ episodes: episodes(12), config, layout, actor: s });
    expect(s.batches[0]).toHaveLength(12);
    expect(s.batches.some((b) => b.includes('act') && b.includes('summarize'))).toBe(true);
    // Batch sizes never grow: an episode leaves the batch only when it ends.
    for (let i = 1; i < s.batches.length; i++)
      expect(s.batches[i]!.length).toBeLessThanOrEqual(s.batches[i - 1]!.length);
    expect(records.map((r) => r.episodeId)).toEqual(episodes(12).map((e) => e.episodeId));
  });

  it('routes summaries to the summarizer and actions to the actor, one call each per round', async () => {
    const actor = recording(randomTokenSampler({ tokenizer, rng: new Rng(4) }));
    const summarizer = recording(randomTokenSampler({ tokenizer, rng: new Rng(5) }));
    const records = await runEpisodes({ episodes: episodes(8), config, layout, actor, summarizer });
    expect(actor.batches.flat().every((s) => s === 'act')).toBe(true);
    expect(summarizer.batches.flat().every((s) => s === 'summarize')).toBe(true);
    const compactions = records.reduce((n, r) => n + r.compactions, 0);
    expect(compactions).toBeGreaterThan(0);
    expect(summarizer.batches.flat()).toHaveLength(compactions);
  });

  it('keeps at most `concurrency` episodes in flight and refills freed slots', async () => {
    const s = recording(randomTokenSampler({ tokenizer, rng: new Rng(6) }));
    const ended: number[] = [];
    await runEpisodes({
      episodes: episodes(7),
      config,
      layout,
      actor: s,
      concurrency: 3,
      onEpisodeEnd: (_, i) => ended.push(i),
    });
    expect(Math.max(...s.batches.map((b) => b.length))).toBe(3);
    expect([...ended].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('records per segment the policy version its first sampler call started with', async () => {
    // Every call pushes new weights while it runs (an asynchronous trainer): the tokens it
    // returns may be the older weights', so the version read as the call starts is recorded.
    let v = 0;
    const inner = randomTokenSampler({ tokenizer, rng: new Rng(8) });
    const actor: TokenSampler = {
      sample: async (r, p) => {
        v++;
        return inner.sample(r, p);
      },
    };
    const [rec] = await runEpisodes({ episodes: episodes(1), config, layout, actor, policyVersion: () => v });
    const versions = rec!.segments.map((s) => s.policyVersion);
    expect(versions[0]).toBe(0);
    for (let i = 1; i < versions.length; i++) expect(versions[i]!).toBeGreaterThan(versions[i - 1]!);
  });

  it('rejects an instruction that cannot fit a window, saying what to raise', async () => {
    const actor = randomTokenSampler({ tokenizer, rng: new Rng(1) });
    await expect(runEpisodes({ episodes: episodes(1, 200), config, layout, actor })).rejects.toThrow(
      InstructionTooLongError,
    );
    await expect(runEpisodes({ episodes: episodes(1, 200), config, layout, actor })).rejects.toThrow(
      /Raise contextWindow to \d+/,
    );
  });

  it('rejects a sampler that breaks the contract', async () => {
    const bad: TokenSampler = {
      sample: async (r) => r.map(() => ({ tokens: [], logprobs: [], finishReason: 'stop' as const })),
    };
    await expect(runEpisodes({ episodes: episodes(1), config, layout, actor: bad })).rejects.toThrow(/no tokens/);
    const short: TokenSampler = { sample: async () => [] };
    await expect(runEpisodes({ episodes: episodes(2), config, layout, actor: short })).rejects.toThrow(
      /0 results for 2 requests/,
    );
  });
});
