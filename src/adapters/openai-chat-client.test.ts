import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { BadRequestError } from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFamily } from '../env/registry.ts';
import { saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { VocabMap } from '../model/tokenizer/vocab-map.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { pythonJinjaAvailable, renderWithPython } from '../rollout/agent-format/testing/qwen3-messages.ts';
import { Rng } from '../util/random.ts';
import { startServe, tinyCheckpoint, type Served } from './testing/crl-serve.ts';

/**
 * /v1/chat/completions through the official `openai` npm client against real `crl serve`
 * processes: messages and `tools` are rendered by the model's own template (the prompt's length is
 * that of Python's jinja2 rendering, tools included), the answer has OpenAI's and vLLM's shape,
 * and a template whose call syntax no parser knows is refused. The served Qwen3 model is untrained
 * and its vocabulary holds no `<tool_call>` token, so its answer cannot hold a call: it comes back
 * as content with no tool_calls (chat-response.test.ts reads answers that hold calls).
 */
const qwen3 = loadTokenizer('qwen3');
const jinja = pythonJinjaAvailable();
const tools: ChatCompletionTool[] = getFamily('kv-ledger').tools!.tools.map((t) => ({
  type: 'function',
  function: { name: t.function.name, description: t.function.description, parameters: { ...t.function.parameters } },
}));
const messages: ChatCompletionMessageParam[] = [
  { role: 'system', content: 'you are an agent' },
  { role: 'user', content: 'read all , then answer . queries i' },
];

describe('crl serve chat completions with the official OpenAI client', () => {
  let qwen: Served;
  let word: Served;
  const client = (s: Served) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });

  beforeAll(async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-chat-')), 'tiny-qwen3');
    const ids = [...new Set([...qwen3.tokenizer.encode('read answer the 1 2 3'), 151644, 151645, 198])];
    const vocab = VocabMap.trimmed(ids, { name: qwen3.name, sha256: qwen3.sha256 });
    const config = modelConfig('tiny', { vocabSize: vocab.size, maxSeqLen: 1024 });
    await saveCheckpoint(dir, {
      policy: new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(1), vocab }),
    });
    const wordDir = join(mkdtempSync(join(tmpdir(), 'crl-chat-')), 'tiny-word');
    await tinyCheckpoint(wordDir, { seed: 7 });
    [qwen, word] = await Promise.all([startServe(['--policy', dir]), startServe(['--policy', wordDir])]);
  }, 240_000);
  afterAll(() => {
    qwen?.stop();
    word?.stop();
  });

  it('a tools request: the prompt holds the tools as the template renders them; an answer without a call is content', async () => {
    const r = await client(qwen).chat.completions.create({
      model: 'tiny-qwen3',
      messages,
      tools,
      max_tokens: 8,
      seed: 1,
    });
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('tiny-qwen3');
    expect(r.choices).toHaveLength(1);
    const [c] = r.choices;
    expect(c!.message.role).toBe('assistant');
    expect(typeof c!.message.content).toBe('string');
    expect(c!.message.tool_calls).toBeUndefined();
    expect(['stop', 'length']).toContain(c!.finish_reason);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    const plain = await client(qwen).chat.completions.create({ model: 'tiny-qwen3', messages, max_tokens: 1 });
    expect(r.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens + 100);
    if (!jinja) return;
    const rendered = (withTools: boolean) =>
      qwen3.tokenizer.encode(
        renderWithPython({
          template: qwen3.chatTemplate,
          messages: messages as never,
          tools: withTools ? tools : null,
          enableThinking: true,
        }),
      ).length;
    expect(r.usage!.prompt_tokens).toBe(rendered(true));
    expect(plain.usage!.prompt_tokens).toBe(rendered(false));
  }, 120_000);

  it('a history with a call (arguments as a JSON string) and its result renders as the template renders it', async () => {
    const history: ChatCompletionMessageParam[] = [
      ...messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'answer', arguments: '{"values": ["t"]}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'wrong' },
    ];
    const r = await client(qwen).chat.completions.create({
      model: 'tiny-qwen3',
      messages: history,
      tools,
      max_tokens: 1,
    });
    if (jinja) {
      const asTemplate = history.map((m) =>
        m.role === 'assistant'
          ? {
              role: 'assistant',
              content: '',
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'answer', arguments: { values: ['t'] } } },
              ],
            }
          : m,
      );
      const text = renderWithPython({
        template: qwen3.chatTemplate,
        messages: asTemplate as never,
        tools,
        enableThinking: true,
      });
      expect(text).toContain('<tool_call>\n{"name": "answer", "arguments": {"values": ["t"]}}\n</tool_call>');
      expect(r.usage!.prompt_tokens).toBe(qwen3.tokenizer.encode(text).length);
    }
    await expect(
      client(qwen).chat.completions.create({
        model: 'tiny-qwen3',
        messages: [
          ...messages,
          {
            role: 'assistant',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'read', arguments: '{' } }],
          },
        ],
        max_tokens: 1,
      }),
    ).rejects.toThrow(/messages\.2\.tool_calls\.0\.function\.arguments: not a JSON object/);
  }, 120_000);

  it('refuses tools with a template whose call syntax no parser knows, and fields it cannot honour', async () => {
    const err = await client(word)
      .chat.completions.create({ model: 'tiny-word', messages, tools, max_tokens: 2 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as Error).message).toMatch(
      /writes tool calls in a syntax this server does not parse \(known: .*hermes/,
    );
    const plain = await client(word).chat.completions.create({ model: 'tiny-word', messages, max_tokens: 2 });
    expect(typeof plain.choices[0]!.message.content).toBe('string');
    await expect(
      client(word).chat.completions.create({ model: 'tiny-word', messages, max_tokens: 2, logprobs: true }),
    ).rejects.toThrow(/not supported by crl serve: logprobs/);
  }, 120_000);

  it('streams the same answer as chat.completion.chunk events, usage last', async () => {
    const ask = { model: 'tiny-qwen3', messages, tools, max_tokens: 6, seed: 5 } as const;
    const whole = await client(qwen).chat.completions.create(ask);
    const stream = await client(qwen).chat.completions.create({
      ...ask,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let role: string | undefined;
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      for (const c of chunk.choices) {
        role ??= c.delta.role;
        content += c.delta.content ?? '';
        expect(c.delta.tool_calls).toBeUndefined();
        finish = c.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(role).toBe('assistant');
    expect(content).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe(whole.choices[0]!.finish_reason);
    expect(usage).toEqual(whole.usage);
  }, 120_000);
});
