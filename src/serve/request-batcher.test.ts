import { describe, expect, it } from 'vitest';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { ModelSampler } from '../model/sampler/sampler.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import type { SampleRequest, SamplingParams, TokenSampler } from '../contracts/index.ts';
import { Rng } from '../util/random.ts';
import { RequestBatcher } from './request-batcher.ts';

const MAX_SEQ = 32;

/** A real ModelSampler on a tiny random policy, with the size of every sample() call it got recorded. */
function recordedSampler(): { sampler: TokenSampler; calls: { size: number; temperature: number }[] } {
  const policy = new PolicyModel({
    config: modelConfig('tiny', { vocabSize: 40, maxSeqLen: MAX_SEQ }),
    optim: DEFAULT_OPTIMIZER,
    rng: new Rng(7),
  });
  const inner = new ModelSampler({ policy, rng: new Rng(1) });
  const calls: { size: number; temperature: number }[] = [];
  return {
    calls,
    sampler: {
      sample: (requests, params) => {
        calls.push({ size: requests.length, temperature: params.temperature });
        return inner.sample(requests, params);
      },
    },
  };
}

const greedy: SamplingParams = { temperature: 0, topP: 1 };
const req = (prompt: number[], maxTokens = 4): SampleRequest => ({ prompt, maxTokens, stopTokens: [] });

describe('RequestBatcher', () => {
  it('puts requests that arrive together into one sample() call per (temperature, top-p)', async () => {
    const { sampler, calls } = recordedSampler();
    const batcher = new RequestBatcher(sampler);
    const [a, b, c] = await Promise.all([
      batcher.sample([req([1, 2, 3])], greedy),
      batcher.sample([req([4, 5]), req([6])], greedy),
      batcher.sample([req([7, 8])], { temperature: 1, topP: 0.9 }),
    ]);
    expect(calls).toEqual([
      { size: 3, temperature: 0 },
      { size: 1, temperature: 1 },
    ]);
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(2);
    expect(c).toHaveLength(1);
    // Greedy answers do not depend on the batch-mates: the same as each request sampled alone.
    const alone = await batcher.sample([req([4, 5])], greedy);
    expect(alone[0]!.tokens).toEqual(b[0]!.tokens);
    expect(calls.at(-1)).toEqual({ size: 1, temperature: 0 });
  });

  it('retries a failing batch one request at a time, so only the bad request fails', async () => {
    const { sampler, calls } = recordedSampler();
    const batcher = new RequestBatcher(sampler);
    const tooLong = req([1, 2, 3], MAX_SEQ); // prompt + maxTokens over the model's maxSeqLen
    const [good1, bad, good2] = await Promise.allSettled([
      batcher.sample([req([1, 2])], greedy),
      batcher.sample([tooLong], greedy),
      batcher.sample([req([3])], greedy),
    ]);
    expect(good1.status).toBe('fulfilled');
    expect(good2.status).toBe('fulfilled');
    expect(bad.status).toBe('rejected');
    expect((bad as PromiseRejectedResult).reason.message).toMatch(/maxTokens/);
    expect(calls.map((c) => c.size)).toEqual([3, 1, 1, 1]);
    expect((good1 as PromiseFulfilledResult<{ tokens: number[] }[]>).value[0]!.tokens).toHaveLength(4);
  });
});
