import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import type { PolicyModel } from '../model/network/policy.ts';
import { topLogprobs } from '../model/sampler/top-logprobs.ts';
import { startServe, tinyCheckpoint, type Served } from './testing/crl-serve.ts';

const { tokenizer } = loadTokenizer('word');
const PROMPT = '<bos> <sys> you are an agent <eot> <user>';

/**
 * /v1/completions through the official `openai` npm client against a real `crl serve` process:
 * the shapes vLLM answers (id, object, created, model, text, logprobs with tokens,
 * token_logprobs, top_logprobs and text_offset), n, logprobs: k, stop, echo, stream, unknown
 * models, and token ids only when asked.
 */
describe('crl serve with the official OpenAI client', () => {
  let server: Served;
  let policy: PolicyModel;
  let client: OpenAI;

  beforeAll(async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-openai-')), 'tiny-model');
    policy = await tinyCheckpoint(dir, { seed: 7 });
    server = await startServe(['--policy', dir]);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
  afterAll(() => server?.stop());

  it('lists the model and answers a completion with vLLM’s fields, logprobs matching the model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny-model']);
    const r = await client.completions.create({
      model: 'tiny-model',
      prompt: PROMPT,
      max_tokens: 6,
      n: 3,
      logprobs: 2,
    });
    expect(r.id).toMatch(/^cmpl-/);
    expect(r.object).toBe('text_completion');
    expect(Math.abs(r.created - Date.now() / 1000)).toBeLessThan(600);
    expect(r.model).toBe('tiny-model');
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const promptIds = tokenizer.encode(PROMPT);
    for (const c of r.choices) {
      const lp = c.logprobs!;
      expect(lp.tokens!.join('')).toBe(c.text); // the pieces are the text
      expect(c.text.length).toBeGreaterThan(0);
      // text_offset: where each token starts in the text.
      lp.text_offset!.forEach((o, i) => expect(c.text.slice(o).startsWith(lp.tokens![i]!)).toBe(true));
      // Tokens back to ids through the text: the model's teacher-forced numbers.
      const ids = tokenizer.encode(c.text);
      expect(ids).toHaveLength(lp.tokens!.length);
      const scored = topLogprobs({ policy, seq: [...promptIds, ...ids], from: promptIds.length, k: 2 });
      lp.token_logprobs!.forEach((x, i) => expect(x).toBeCloseTo(scored[i]!.logprob, 4));
      lp.top_logprobs!.forEach((top, i) => {
        const keys = Object.keys(top);
        expect(keys[0]).toBe(lp.tokens![i]); // the sampled token first, then the 2 most likely
        expect(keys.length).toBeGreaterThanOrEqual(2);
        expect(keys.length).toBeLessThanOrEqual(3);
        for (const t of scored[i]!.top)
          expect(
            top[
              tokenizer
                .decode([...promptIds, ...ids.slice(0, i), t.id])
                .slice(tokenizer.decode([...promptIds, ...ids.slice(0, i)]).length)
            ],
          ).toBeCloseTo(t.logprob, 4);
      });
      expect(lp.tokens!.some((t) => t.startsWith('token_id:'))).toBe(false);
      expect(['length', 'stop']).toContain(c.finish_reason);
    }
    expect(r.usage).toMatchObject({ prompt_tokens: promptIds.length });
    expect(r.usage!.completion_tokens).toBe(r.choices.reduce((a, c) => a + c.logprobs!.tokens!.length, 0));
  });

  it('stops at a stop string, echoes the prompt, and streams the same greedy text as server-sent events', async () => {
    const greedy = await client.completions.create({
      model: 'tiny-model',
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
    });
    const text = greedy.choices[0]!.text;
    const words = text.trim().split(' ');
    expect(words.length).toBeGreaterThan(3);
    const stop = ` ${words[2]}`;
    const cut = await client.completions.create({
      model: 'tiny-model',
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
      stop: [stop],
    });
    expect(cut.choices[0]!.text).toBe(text.slice(0, text.indexOf(stop)));
    expect(cut.choices[0]!.finish_reason).toBe('stop');

    const echoed = await client.completions.create({
      model: 'tiny-model',
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
      echo: true,
      logprobs: 0,
    });
    expect(echoed.choices[0]!.text).toBe(PROMPT + text);
    expect(echoed.choices[0]!.logprobs!.token_logprobs![0]).toBeNull();
    expect(echoed.choices[0]!.logprobs!.tokens!.join('')).toBe(PROMPT + text);

    const stream = await client.completions.create({
      model: 'tiny-model',
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed = '';
    let finish: string | null = null;
    let usage = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        streamed += c.text;
        finish = c.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    expect(streamed).toBe(text);
    expect(finish).toBe(greedy.choices[0]!.finish_reason);
    expect(usage).toBe(greedy.usage!.completion_tokens);
  });

  it('rejects an unknown model (404) and unsupported fields (400); token ids only when asked', async () => {
    await expect(client.completions.create({ model: 'gpt-4', prompt: PROMPT, max_tokens: 2 })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(
      client.completions.create({ model: 'tiny-model', prompt: PROMPT, max_tokens: 2, suffix: 'x' }),
    ).rejects.toThrow(/not supported by crl serve: suffix/);
    const asIds = await client.completions.create({
      model: 'tiny-model',
      prompt: tokenizer.encode(PROMPT),
      max_tokens: 3,
      logprobs: 0,
      // vLLM's extension: not in the client's types, sent as it is.
      ...({ return_tokens_as_token_ids: true } as object),
    });
    expect(asIds.choices[0]!.logprobs!.tokens!.every((t) => /^token_id:\d+$/.test(t))).toBe(true);
  });
});
