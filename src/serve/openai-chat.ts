import { randomUUID } from 'node:crypto';
import { Template } from '@huggingface/jinja';
import { z } from 'zod';
import type { SampleRequest, SampleResult, SamplingParams } from '../contracts/index.ts';
import { applyStopStrings, Detokenizer } from '../adapters/completion-text.ts';
import type { ChatTemplateSource } from '../rollout/chat-format.ts';
import { chatFormatOf } from '../rollout/chat-layout.ts';
import { knownToolCallSyntaxes, toolCallSyntaxOf } from '../rollout/agent-format/tool-call-syntax.ts';
import { chatMessage } from './chat-response.ts';
import { chatStreamEvents } from './chat-stream.ts';
import { HttpError } from './http-guard.ts';
import { adapterNamed } from './route.ts';

/**
 * `POST /v1/chat/completions` as the OpenAI API defines it, with vLLM's shapes
 * (vllm/entrypoints/openai/chat_completion): the messages, and the request's `tools`, are rendered
 * by the model's own chat template (add_generation_prompt, chat_template_kwargs) and generation
 * stops at the template's assistant turn end. With tools, the answer's calls are parsed in the
 * template's syntax by the tools format's parsers (chat-response.ts) and come back as
 * `tool_calls` with finish_reason `tool_calls`. Fields it cannot honour are refused with a 400
 * that names them. `stream` sends the answer as chat.completion.chunk events (chat-stream.ts).
 * Differences from vLLM: docs/remote-engines.md.
 */
const MAX_CHOICES = 64;

const Text = z.union([
  z.string(),
  z
    .array(z.object({ type: z.literal('text'), text: z.string() }).loose())
    .transform((p) => p.map((x) => x.text).join('')),
]);
const CallIn = z
  .object({
    id: z.string().nullish(),
    type: z.literal('function').nullish(),
    function: z.object({ name: z.string().min(1), arguments: z.string() }).loose(),
  })
  .loose();
const Message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: Text }).loose(),
  z.object({ role: z.literal('user'), content: Text }).loose(),
  z
    .object({
      role: z.literal('assistant'),
      content: Text.nullish(),
      tool_calls: z.array(CallIn).nullish(),
      reasoning_content: z.string().nullish(),
    })
    .loose(),
  z.object({ role: z.literal('tool'), content: Text, tool_call_id: z.string().nullish() }).loose(),
]);
const Tool = z
  .object({
    type: z.literal('function'),
    function: z
      .object({
        name: z.string().min(1),
        description: z.string().nullish(),
        parameters: z.record(z.string(), z.unknown()).nullish(),
      })
      .loose(),
  })
  .loose();
const ChatRequest = z
  .object({
    model: z.string().nullish(),
    messages: z.array(Message).min(1),
    tools: z.array(Tool).nullish(),
    tool_choice: z.enum(['auto', 'none']).nullish(),
    max_tokens: z.number().int().nonnegative().nullish(),
    max_completion_tokens: z.number().int().nonnegative().nullish(),
    temperature: z.number().min(0).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
    stop: z.union([z.string(), z.array(z.string())]).nullish(),
    seed: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).nullish(),
    chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
    user: z.string().nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
  })
  .loose();

/** Fields OpenAI or vLLM take that this server does not: refused unless they hold their no-op value. */
const UNSUPPORTED: Readonly<Record<string, (v: unknown) => boolean>> = {
  logprobs: (v) => v == null || v === false,
  top_logprobs: (v) => v == null,
  tool_choice: (v) => v == null || v === 'auto' || v === 'none',
  response_format: (v) => v == null,
  frequency_penalty: (v) => v == null || v === 0,
  presence_penalty: (v) => v == null || v === 0,
  logit_bias: (v) => v == null || (typeof v === 'object' && Object.keys(v).length === 0),
  add_generation_prompt: (v) => v == null || v === true,
  continue_final_message: (v) => v == null || v === false,
  chat_template: (v) => v == null,
};

export interface ChatOptions {
  model: string;
  /** Loaded LoRA adapters, served by name (route.ts adapterNamed). */
  adapters?: { has(name: string): boolean };
  /** The served tokenizer with its chat template. */
  chat: ChatTemplateSource;
  vocabSize: number;
  maxModelLen: number;
  sample(requests: readonly SampleRequest[], params: SamplingParams, adapter?: string): Promise<SampleResult[]>;
}

const bad = (message: string) => new HttpError(400, message);

export async function chatCompletions(
  body: unknown,
  o: ChatOptions,
): Promise<{ json: unknown } | { events: string[] }> {
  const refused = Object.entries(UNSUPPORTED)
    .filter(
      ([k, ok]) => typeof body === 'object' && body !== null && k in body && !ok((body as Record<string, unknown>)[k]),
    )
    .map(([k]) => k);
  if (refused.length > 0) throw bad(`not supported by crl serve: ${refused.join(', ')} (leave them unset)`);
  const r = ChatRequest.safeParse(body);
  if (!r.success) throw bad(r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; '));
  const req = r.data;
  const adapter = adapterNamed(o, req.model);
  const specs = req.tools && req.tools.length > 0 ? req.tools : null;
  const syntax = specs ? toolCallSyntaxOf(o.chat.chatTemplate) : null;
  if (specs && !syntax)
    throw bad(
      `tools: the chat template of tokenizer ${o.chat.name} writes tool calls in a syntax this server does not parse (known: ${knownToolCallSyntaxes().join(', ')})`,
    );
  const prompt = renderPrompt(req, o, specs, syntax?.templateKwargs ?? {});
  const maxTokens = req.max_completion_tokens ?? req.max_tokens ?? o.maxModelLen - prompt.length;
  if (maxTokens <= 0 || prompt.length + maxTokens > o.maxModelLen)
    throw bad(
      `This model's maximum context length is ${o.maxModelLen} tokens. However, you requested ${prompt.length + Math.max(maxTokens, 1)} tokens (${prompt.length} in the messages, ${Math.max(maxTokens, 1)} in the completion). Please reduce the length of the messages or completion.`,
    );
  const stopTokens = turnEnds(o.chat);
  const n = req.n ?? 1;
  const results = await o.sample(
    Array.from({ length: n }, (_, i) => ({
      prompt,
      maxTokens,
      stopTokens,
      ...(req.seed == null ? {} : { seed: req.seed + i }),
    })),
    { temperature: req.temperature ?? 1, topP: req.top_p ?? 1 },
    adapter,
  );
  const detok = new Detokenizer(o.chat.tokenizer);
  const stops = req.stop == null ? [] : typeof req.stop === 'string' ? [req.stop] : req.stop;
  const tools = syntax && specs && req.tool_choice !== 'none' ? { syntax, specs } : null;
  let generated = 0;
  const choices = results.map((res, index) => {
    const ended = res.finishReason === 'stop' && stopTokens.includes(res.tokens[res.tokens.length - 1]!);
    const tokens = ended ? res.tokens.slice(0, -1) : res.tokens;
    const pieces = detok.pieces(prompt, tokens);
    let text = pieces.join('');
    let finish: string = res.finishReason;
    let stopReason: string | number | null = ended ? res.tokens[res.tokens.length - 1]! : null;
    const cut = applyStopStrings({ pieces, stops, includeStop: false });
    if (cut) {
      text = cut.text;
      finish = 'stop';
      stopReason = cut.stop;
    }
    generated += res.tokens.length;
    const { message, calledTools } = chatMessage({ text, tools });
    // vLLM: a turn whose calls parsed finishes with tool_calls, whatever stopped it.
    return {
      index,
      message,
      logprobs: null,
      finish_reason: calledTools ? 'tool_calls' : finish,
      stop_reason: stopReason,
    };
  });
  const head = {
    id: `chatcmpl-${randomUUID().replace(/-/g, '')}`,
    created: Math.floor(Date.now() / 1000),
    model: adapter ?? o.model,
  };
  const usage = { prompt_tokens: prompt.length, completion_tokens: generated, total_tokens: prompt.length + generated };
  if (req.stream)
    return { events: chatStreamEvents({ head, choices, usage: req.stream_options?.include_usage ? usage : null }) };
  return { json: { ...head, object: 'chat.completion', choices, usage, system_fingerprint: null } };
}

const templates = new WeakMap<ChatTemplateSource, Template>();

/** apply_chat_template(messages, tools, add_generation_prompt=True, **chat_template_kwargs), encoded. */
function renderPrompt(
  req: z.infer<typeof ChatRequest>,
  o: ChatOptions,
  specs: readonly z.infer<typeof Tool>[] | null,
  syntaxKwargs: Readonly<Record<string, unknown>>,
): number[] {
  let template = templates.get(o.chat);
  if (!template) {
    template = new Template(o.chat.chatTemplate);
    templates.set(o.chat, template);
  }
  // Templates read a call's arguments as an object (they write it with tojson); the API sends a JSON string.
  const messages = req.messages.map((m, i) => {
    if (m.role !== 'assistant') return { ...m };
    const toolCalls = (m.tool_calls ?? []).map((c, j) => {
      let args: unknown;
      try {
        args = JSON.parse(c.function.arguments);
      } catch {
        args = null;
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args))
        throw bad(`messages.${i}.tool_calls.${j}.function.arguments: not a JSON object`);
      return { ...c, type: 'function', function: { ...c.function, arguments: args } };
    });
    const { tool_calls: _, ...rest } = m;
    return { ...rest, content: m.content ?? '', ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
  });
  let text: string;
  try {
    text = template.render({
      ...o.chat.templateVars,
      ...(specs ? syntaxKwargs : {}),
      ...req.chat_template_kwargs,
      messages,
      ...(specs ? { tools: specs } : {}),
      add_generation_prompt: true,
    });
  } catch (e) {
    throw bad(`the chat template cannot render these messages: ${(e as Error).message}`);
  }
  const ids = o.chat.tokenizer.encode(text);
  if (ids.some((t) => t >= o.vocabSize)) throw bad(`the rendered messages hold ids outside the vocabulary`);
  return ids;
}

/** The ids an assistant turn ends on: the first of "turn end + next turn's opening", after a call or an answer. */
function turnEnds(chat: ChatTemplateSource): number[] {
  let t;
  try {
    t = chatFormatOf(chat).turns;
  } catch (e) {
    throw bad(`chat completions need a chat template whose turn ends can be derived: ${(e as Error).message}`);
  }
  const ends = [[...t.assistant.close, ...t.observation.open][0], [...t.assistant.close, ...t.user.open][0]];
  return [...new Set(ends.filter((x): x is number => x !== undefined))];
}
