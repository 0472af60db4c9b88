import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import type { ChatMessage } from '../contracts/index.ts';
import { textPolicySampler } from './text-policy-sampler.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const eot = tokenizer.specialId('<eot>');
const params = { temperature: 1, topP: 1 };

describe('textPolicySampler', () => {
  it('shows the policy the parsed window and encodes its text followed by <eot>', async () => {
    const seen: ChatMessage[][] = [];
    const sampler = textPolicySampler({
      tokenizer: source,
      rng: new Rng(1),
      policy: (m) => {
        seen.push([...m]);
        return 'read chunk 2';
      },
    });
    const prompt = tokenizer.encode('<bos> <sys> you are an agent <eot> <user> go <eot> <asst>');
    const [r] = await sampler.sample([{ prompt, maxTokens: 12, stopTokens: [eot] }], params);
    expect(seen[0]).toEqual([
      { role: 'system', content: 'you are an agent' },
      { role: 'user', content: 'go' },
    ]);
    expect(r).toEqual({
      tokens: [...tokenizer.encode('read chunk 2'), eot],
      logprobs: [null, null, null, null],
      finishReason: 'stop',
    });
  });

  it('caps at maxTokens with finish reason length, and stops at an inline stop token', async () => {
    const sampler = textPolicySampler({ tokenizer: source, rng: new Rng(1), policy: () => 'a b c d e' });
    const [capped] = await sampler.sample([{ prompt: [], maxTokens: 3, stopTokens: [eot] }], params);
    expect(capped!.tokens).toEqual(tokenizer.encode('a b c'));
    expect(capped!.finishReason).toBe('length');
    const exact = await textPolicySampler({ tokenizer: source, rng: new Rng(1), policy: () => 'a b' }).sample(
      [{ prompt: [], maxTokens: 3, stopTokens: [eot] }],
      params,
    );
    expect(exact[0]!.finishReason).toBe('stop');
    const inline = await textPolicySampler({ tokenizer: source, rng: new Rng(1), policy: () => 'a <eot> b' }).sample(
      [{ prompt: [], maxTokens: 9, stopTokens: [eot] }],
      params,
    );
    expect(inline[0]!.tokens).toEqual(tokenizer.encode('a <eot>'));
  });

  it('answers a batch in request order', async () => {
    const sampler = textPolicySampler({ tokenizer: source, rng: new Rng(1), policy: (m) => m[0]?.content ?? 'none' });
    const out = await sampler.sample(
      ['north', 'south', 'east'].map((w) => ({
        prompt: tokenizer.encode(`<user> ${w} <eot> <asst>`),
        maxTokens: 5,
        stopTokens: [eot],
      })),
      params,
    );
    expect(out.map((r) => tokenizer.decode(r.tokens))).toEqual(['north <eot>', 'south <eot>', 'east <eot>']);
  });
});
