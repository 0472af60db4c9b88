import { describe, expect, it } from 'vitest';
import { BUILTIN_FAMILIES } from '../env/builtin.ts';
import type { TaskFamily } from '../env/family.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { resolveRolloutConfig } from './config.ts';
import type { EpisodeSpec } from './episode.ts';
import type { EpisodeRecord } from './record.ts';
import { runEpisodes } from './runner.ts';
import { chunkSumFamily } from '../env/chunk-sum.ts';
import { lockStepRunEpisodes } from './testing/lockstep-runner.ts';
import { randomTokenSampler, RandomEnv } from './testing/scripted.ts';
import { textPolicySampler } from './text-policy-sampler.ts';

/**
 * Continuous batching must not change results for in-process environments: same token ids, same
 * records for the same seeds. The samplers here depend on batch composition and call order (one
 * rng shared by every request, and by actor and summarizer), so any change in scheduling shows.
 * Each test compares against the lock-step reference run on the same inputs, not against a copy of
 * old output, so it fails on a wrong result and not on a deliberate change elsewhere.
 */
const source = loadTokenizer('word');
const tokenizer = source.tokenizer as WordTokenizer;
const compactions = (records: readonly EpisodeRecord[]): number => records.reduce((a, r) => a + r.compactions, 0);
type Runner = typeof runEpisodes;

/**
 * Runs the same episodes (fresh environments, fresh samplers from the same seeds) through the
 * continuous-batching runner and through the lock-step reference (testing/lockstep-runner.ts, the
 * runner as it was before continuous batching), and returns both record lists; they must be equal
 * token for token.
 */
async function bothRunners(run: (runner: Runner) => Promise<EpisodeRecord[]>) {
  return { batched: await run(runEpisodes), lockStep: await run(lockStepRunEpisodes) };
}

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
  it('reproduces the lock-step runner record for record (one sampler, refilled slots)', async () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { stepLimit: 40 } });
    const { batched, lockStep } = await bothRunners((run) =>
      run({
        episodes: randomEpisodes(9),
        config,
        layout,
        actor: randomTokenSampler({ tokenizer, rng: new Rng(11) }),
        concurrency: 4,
      }),
    );
    expect(compactions(batched)).toBeGreaterThan(0); // the comparison covers compaction too
    expect(batched).toEqual(lockStep);
  });

  it('reproduces the lock-step runner record for record (actor and summarizer sharing one rng)', async () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { stepLimit: 40, maxWindows: 3 } });
    const { batched, lockStep } = await bothRunners((run) => {
      const rng = new Rng(12);
      const actor = randomTokenSampler({ tokenizer, rng });
      const summarizer = randomTokenSampler({ tokenizer, rng });
      return run({ episodes: randomEpisodes(8), config, layout, actor, summarizer, concurrency: 5 });
    });
    expect(compactions(batched)).toBeGreaterThan(0);
    expect(batched).toEqual(lockStep);
  });

  it('reproduces the lock-step runner record for record (scripted expert and lossy writer)', async () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: {} });
    const { batched, lockStep } = await bothRunners((run) => {
      const rng = new Rng(5);
      const actor = textPolicySampler({ tokenizer: source, policy: chunkSumFamily.expert, rng });
      const summarizer = textPolicySampler({
        tokenizer: source,
        policy: chunkSumFamily.summaryWriters.lossy(0.3),
        rng,
      });
      const episodes = Array.from({ length: 7 }, (_, i) => ({
        episodeId: `c${i}`,
        env: chunkSumFamily.create({}),
        seed: 7 * i,
      }));
      return run({ episodes, config, layout, actor, summarizer, concurrency: 3 });
    });
    // The lossy writer makes some episodes fail: both outcomes are compared, not just successes.
    expect(new Set(batched.map((r) => r.reward))).toEqual(new Set([0, 1]));
    expect(batched).toEqual(lockStep);
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
