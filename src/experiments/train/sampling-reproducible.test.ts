import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Environment, EnvSpec } from '../../contracts/index.ts';
import { createEnvironment } from '../../env/create-environment.ts';
import { getFamily } from '../../env/registry.ts';
import { modelConfig } from '../../model/network/config.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { ModelSampler } from '../../model/sampler/sampler.ts';
import { DEFAULT_OPTIMIZER } from '../../optim/config.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { Rng } from '../../util/random.ts';
import { sampleEpisodes } from './iteration-stages.ts';

/**
 * A seed reproduces its episodes whatever the machine's timing (model/sampler/sampler.ts): with sandboxed
 * environments, which episodes share a sampler batch and in what order they arrive depends on how
 * fast each command returned. Two runs whose environments answer after different random delays
 * batch their requests differently, and must still sample the same tokens.
 */
const source = loadTokenizer('word');
const { config: rollout, layout } = resolveRolloutConfig({
  tokenizer: source,
  input: { contextWindow: 256, maxWindows: 3, temperature: 1 },
});
const family = getFamily('kv-ledger');

/** Every reset and step answers after a random 0-79 ms (past the runner's 25 ms batching wait), drawn from `jitter`, as a sandbox under load does. */
function jittered(jitter: Rng): (spec: EnvSpec) => Environment {
  return (spec) => {
    const env = createEnvironment(spec);
    const wait = () => sleep(jitter.int(80));
    return {
      name: env.name,
      reset: async (seed, o) => {
        await wait();
        return env.reset(seed, o);
      },
      step: async (action, o) => {
        await wait();
        return env.step(action, o);
      },
    };
  };
}

describe('sampling with per-episode streams', () => {
  it('gives the same episodes under different timing and batching', async () => {
    const policy = new PolicyModel({
      config: modelConfig('tiny', { vocabSize: source.tokenizer.vocabSize, maxSeqLen: 256 }),
      optim: DEFAULT_OPTIMIZER,
      rng: new Rng(1),
    });
    const batches: string[][] = [];
    const run = async (jitterSeed: number) => {
      const sampler = new ModelSampler({ policy, rng: new Rng(42) });
      const calls: string[] = []; // each call's episodes, in order
      batches.push(calls);
      const records = await sampleEpisodes({
        family,
        knobs: { queries: 1 },
        rollout,
        layout,
        sampler: {
          sample: (requests, params) => {
            calls.push(requests.map((r) => r.episodeId).join(','));
            return sampler.sample(requests, params);
          },
        },
        createEnv: jittered(new Rng(jitterSeed)),
        batchEpisodes: 6,
        groupSize: 2,
        iteration: 1,
        rng: new Rng(7),
      });
      return records.map((r: EpisodeRecord) => ({
        id: r.episodeId,
        outcome: r.outcome,
        segments: r.segments.map((s) => s.tokens.join(' ')),
      }));
    };
    const a = await run(1);
    const b = await run(2);
    // The runs were batched differently (else this test would show nothing) ...
    expect(batches[0]).not.toEqual(batches[1]);
    // ... and sampled the same episodes, token for token.
    expect(b).toEqual(a);
    expect(a.some((r) => r.segments.length > 1)).toBe(true); // episodes long enough to span several calls
  }, 120_000);
});
