import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer.ts';
import { engineProtocol } from './engine-protocols.ts';

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
