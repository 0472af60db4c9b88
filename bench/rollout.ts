/**
 * Rollout runtime overhead: thousands of episodes with a scripted sampler, timing what
 * the runtime itself costs per sampled token (window bookkeeping, compaction, records), apart
 * from the sampler and the environment. Run: `npm run bench:rollout [-- --episodes N]`.
 */
import { performance } from 'node:perf_hooks';
import { modelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { ModelSampler } from '../src/model/sampler/sampler.ts';
import { loadTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { resolveRolloutConfig } from '../src/rollout/config.ts';
import { runEpisodes } from '../src/rollout/runner.ts';
import { chunkSumFamily } from '../src/env/chunk-sum.ts';
import { RandomEnv, randomTokenSampler } from '../src/rollout/testing/scripted.ts';
import { textPolicySampler } from '../src/rollout/text-policy-sampler.ts';
import type { Environment, TokenSampler } from '../src/contracts/index.ts';
import { Rng } from '../src/util/random.ts';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const EPISODES = arg('episodes', 4000);
const BATCH = arg('batch', 64);
const MODEL_EPISODES = arg('model-episodes', 16);
const MODEL_PRESET = 'reference';

/** Wraps a sampler and environments to time them, so the rest is the runtime's own cost. */
function timedSampler(inner: TokenSampler, clock: { sampler: number; tokens: number }): TokenSampler {
  return {
    sample: async (reqs, params) => {
      const t0 = performance.now();
      const out = await inner.sample(reqs, params);
      clock.sampler += performance.now() - t0;
      for (const r of out) clock.tokens += r.tokens.length;
      return out;
    },
  };
}

function timedEnv(env: Environment, clock: { env: number }): Environment {
  return {
    name: env.name,
    reset: (seed) => {
      const t0 = performance.now();
      const r = env.reset(seed);
      clock.env += performance.now() - t0;
      return r;
    },
    step: (a) => {
      const t0 = performance.now();
      const r = env.step(a);
      clock.env += performance.now() - t0;
      return r;
    },
  };
}

async function scenario(
  name: string,
  make: { sampler: () => TokenSampler; env: () => Environment; episodes?: number },
) {
  const count = make.episodes ?? EPISODES;
  const { config, layout } = resolveRolloutConfig({ tokenizer: loadTokenizer('word') });
  const clock = { sampler: 0, env: 0, tokens: 0 };
  const actor = timedSampler(make.sampler(), clock);
  const episodes = Array.from({ length: count }, (_, i) => ({
    episodeId: `b${i}`,
    env: timedEnv(make.env(), clock),
    seed: 10_000 + i,
  }));
  const t0 = performance.now();
  const records = await runEpisodes({ episodes, config, layout, actor, concurrency: BATCH });
  const total = performance.now() - t0;
  const runtime = total - clock.sampler - clock.env;
  const compactions = records.reduce((a, r) => a + r.compactions, 0);
  const segTokens = records.reduce((a, r) => a + r.segments.reduce((b, s) => b + s.tokens.length, 0), 0);
  const usPerToken = (runtime * 1000) / clock.tokens;
  console.log(
    `${name.padEnd(26)} episodes ${count}  sampled tokens ${clock.tokens}  compactions ${compactions}  ` +
      `recorded tokens ${segTokens}\n${''.padEnd(26)} total ${total.toFixed(0)} ms = runtime ${runtime.toFixed(0)} + sampler ${clock.sampler.toFixed(0)} + env ${clock.env.toFixed(0)}  ` +
      `-> runtime overhead ${usPerToken.toFixed(2)} us per sampled token`,
  );
  return { usPerToken, samplerUsPerToken: (clock.sampler * 1000) / clock.tokens, runtimeShare: runtime / total };
}

const tokenizer = loadTokenizer('word');
const scripted = await scenario('random tokens, random env', {
  sampler: () => randomTokenSampler({ tokenizer: tokenizer.tokenizer, rng: new Rng(1) }),
  env: () => new RandomEnv({ instructionWords: 8, maxObservationWords: 40, doneProbability: 0.03 }),
});
await scenario('chunk-sum expert (text)', {
  sampler: () => textPolicySampler({ tokenizer, policy: chunkSumFamily.expert, rng: new Rng(1) }),
  env: () => chunkSumFamily.create(),
});

// Paired with the embedded model (random weights: the cost per token does not depend on them).
const model = new PolicyModel({
  config: modelConfig(MODEL_PRESET, { vocabSize: tokenizer.tokenizer.vocabSize, maxSeqLen: 256 }),
  optim: DEFAULT_OPTIMIZER,
  rng: new Rng(1),
});
const m = await scenario(`embedded model (${MODEL_PRESET})`, {
  sampler: () => new ModelSampler({ policy: model, rng: new Rng(2) }),
  env: () => chunkSumFamily.create(),
  episodes: MODEL_EPISODES,
});
console.log(
  `\nruntime overhead: ${scripted.usPerToken.toFixed(2)} us/token (scripted), ${m.usPerToken.toFixed(2)} us/token with the model; ` +
    `model sampling ${m.samplerUsPerToken.toFixed(1)} us/token; runtime share of a model episode ${(100 * m.runtimeShare).toFixed(2)}% (target < 5%)`,
);
