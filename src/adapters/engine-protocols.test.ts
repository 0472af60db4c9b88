import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { requestSeed } from '../util/random.ts';
import { engineProtocol, withRequestSeed } from './engine-protocols.ts';

describe('the SGLang /generate answer', () => {
  it('carries the decoded text of the sampled tokens, as SGLang does, and parses back to the same result', () => {
    const sglang = engineProtocol('sglang');
    const tokenizer = new WordTokenizer();
    const tokens = [5, 9, 12, 20];
    const result = { tokens, logprobs: tokens.map(() => -0.5), finishReason: 'length' as const };
    const body = sglang.responseBody!({ result, model: 'm', promptTokens: 3, text: tokenizer.decode(tokens) });
    expect((body as { text: string }).text).toBe(tokenizer.decode(tokens));
    expect((body as { text: string }).text).not.toBe('');
    const request = { prompt: [1, 2, 3], maxTokens: tokens.length, stopTokens: [] };
    expect(sglang.parseResponse(body, request)).toMatchObject({ tokens, finishReason: 'length' });
  });
});

describe('per-request seeds', () => {
  const request = { prompt: [1, 2, 3], maxTokens: 4, stopTokens: [7], episodeId: 'ep-3' };
  const params = { temperature: 1, topP: 1 };

  it("go where each engine reads them: vLLM's seed, SGLang's sampling_params.sampling_seed", () => {
    const seeded = withRequestSeed(11, request);
    expect(seeded.seed).toBe(requestSeed(11, request));
    expect(engineProtocol('vllm').requestBody({ request: seeded, params })).toMatchObject({ seed: seeded.seed });
    const sglang = engineProtocol('sglang');
    const body = sglang.requestBody({ request: seeded, params }) as { sampling_params: Record<string, unknown> };
    expect(body.sampling_params.sampling_seed).toBe(seeded.seed);
    // crl serve reads SGLang's field back into the request.
    expect(sglang.parseRequest!(body).request.seed).toBe(seeded.seed);
  });

  it('come from the episode: none without a sampler seed or an episode id, and differ between episodes', () => {
    expect(withRequestSeed(undefined, request)).toBe(request);
    const { episodeId: _, ...anonymous } = request;
    expect(withRequestSeed(11, anonymous).seed).toBeUndefined();
    expect(withRequestSeed(11, { ...request, seed: 5 }).seed).toBe(5); // a seed already set is kept
    expect(withRequestSeed(11, request).seed).not.toBe(withRequestSeed(11, { ...request, episodeId: 'ep-4' }).seed);
    expect(withRequestSeed(11, request).seed).not.toBe(withRequestSeed(12, request).seed);
    expect('seed' in (engineProtocol('vllm').requestBody({ request, params }) as object)).toBe(false);
  });
});
