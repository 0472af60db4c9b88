import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BUILTIN_FAMILIES } from '../env/builtin.ts';
import type { TaskFamily } from '../env/family.ts';
import { loadTokenizer } from '../model/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { resolveRolloutConfig } from './config.ts';
import type { EpisodeSpec } from './episode.ts';
import { recordsToJsonl, type EpisodeRecord } from './record.ts';
import { runEpisodes } from './runner.ts';
import { chunkSumFamily } from '../env/chunk-sum.ts';
import { lockStepRunEpisodes } from './testing/lockstep-runner.ts';
import { randomTokenSampler, RandomEnv } from './testing/scripted.ts';
import { textPolicySampler } from './text-policy-sampler.ts';

/**
 * Continuous batching must not change results for in-process environments: same token ids, same
 * records for the same seeds. The samplers here depend on batch composition and call order (one
 * rng shared by every request, and by actor and summarizer), so any change in scheduling shows.
 */
const source = loadTokenizer('word');
const tokenizer = source.tokenizer as WordTokenizer;
// Records now name their tokenizer; the digests are of everything else, unchanged since the
// lock-step runner (so they also pin the word vocabulary's token ids).
const digest = (records: readonly EpisodeRecord[]): string =>
  createHash('sha256')
    .update(recordsToJsonl(records.map(({ tokenizer: _, ...r }) => r)))
    .digest('hex')
    .slice(0, 16);
const compactions = (records: readonly EpisodeRecord[]): number => records.reduce((a, r) => a + r.compactions, 0);

const randomEpisodes = (n: number): EpisodeSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    episodeId: `g${i}`,
    env: new RandomEnv({ instructionWords: 6, maxObservationWords: 40, doneProbability: 0.03 }),
    seed: 100 + i,
  }));

const familyEpisodes = (family: TaskFamily, n: number): EpisodeSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    episodeId: `${family.name}-${i}`,
    env: family.create({}),
    seed: family.evalSeeds.start + 3 * i,
  }));

describe('runner results do not depend on scheduling', () => {
  // Digests of the record files the lock-step runner wrote for these runs, before continuous batching.
  it('reproduces the lock-step runner byte for byte (one sampler, refilled slots)', async () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { stepLimit: 40 } });
    const actor = randomTokenSampler({ tokenizer, rng: new Rng(11) });
    const records = await runEpisodes({ episodes: randomEpisodes(9), config, layout, actor, concurrency: 4 });
    expect(compactions(records)).toBe(22);
    expect(digest(records)).toBe('93befd12e06adea0');
  });

  it('reproduces the lock-step runner byte for byte (actor and summarizer sharing one rng)', async () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { stepLimit: 40, maxWindows: 3 } });
    const rng = new Rng(12);
    const actor = randomTokenSampler({ tokenizer, rng });
    const summarizer = randomTokenSampler({ tokenizer, rng });
    const episodes = randomEpisodes(8);
    const records = await runEpisodes({ episodes, config, layout, actor, summarizer, concurrency: 5 });
    expect(compactions(records)).toBe(13);
    expect(digest(records)).toBe('f66c12fc85e07c68');
  });

  it('reproduces the lock-step runner byte for byte (scripted expert and lossy writer)', async () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: {} });
    const rng = new Rng(5);
    const actor = textPolicySampler({ tokenizer: source, policy: chunkSumFamily.expert, rng });
    const summarizer = textPolicySampler({ tokenizer: source, policy: chunkSumFamily.summaryWriters.lossy(0.3), rng });
    const episodes = Array.from({ length: 7 }, (_, i) => ({
      episodeId: `c${i}`,
      env: chunkSumFamily.create({}),
      seed: 7 * i,
    }));
    const records = await runEpisodes({ episodes, config, layout, actor, summarizer, concurrency: 3 });
    expect(records.map((r) => r.reward).join('')).toBe('0111000');
    expect(digest(records)).toBe('7d55667122424af3');
  });

  for (const family of BUILTIN_FAMILIES) {
    it(`gives the lock-step runner's records on ${family.name} (random policy; expert with a lossy writer)`, async () => {
      const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { maxWindows: 4, stepLimit: 30 } });
      const random = async (run: typeof runEpisodes) =>
        run({
          episodes: familyEpisodes(family, 7),
          config,
          layout,
          actor: randomTokenSampler({ tokenizer, rng: new Rng(11) }),
          concurrency: 4,
        });
      expect(await random(runEpisodes)).toEqual(await random(lockStepRunEpisodes));
      const expert = async (run: typeof runEpisodes) => {
        const rng = new Rng(5);
        return run({
          episodes: familyEpisodes(family, 7),
          config,
          layout,
          actor: textPolicySampler({ tokenizer: source, policy: family.expert, rng }),
          summarizer: textPolicySampler({ tokenizer: source, policy: family.summaryWriters.lossy(0.3), rng }),
          concurrency: 3,
        });
      };
      const records = await expert(runEpisodes);
      expect(compactions(records)).toBeGreaterThan(0);
      expect(records).toEqual(await expert(lockStepRunEpisodes));
    });
  }
});
