import type { ChatMessageOut } from './chat-response.ts';

/**
 * A chat completion as server-sent events, in the chunks OpenAI and vLLM stream
 * (`chat.completion.chunk`): per choice, the role first, then the reasoning, the content and each
 * tool call (`delta.tool_calls[{index, id, type, function: {name, arguments}}]`), then an empty
 * delta with the finish reason; with include_usage a last chunk with the usage and no choices;
 * then `data: [DONE]`. The embedded sampler generates a batch in one call, so a choice's text
 * comes in one delta, once it is done (as /v1/completions streams, docs/remote-engines.md).
 */
export function chatStreamEvents(o: {
  head: { id: string; created: number; model: string };
  choices: readonly { index: number; message: ChatMessageOut; finish_reason: string; stop_reason: unknown }[];
  usage: Record<string, number> | null;
}): string[] {
  const event = (body: unknown) => `data: ${JSON.stringify(body)}\n\n`;
  const chunk = (index: number, delta: Record<string, unknown>, finish: string | null = null, stop: unknown = null) =>
    event({
      ...o.head,
      object: 'chat.completion.chunk',
      choices: [{ index, delta, logprobs: null, finish_reason: finish, ...(finish ? { stop_reason: stop } : {}) }],
    });
  const events: string[] = [];
  for (const c of o.choices) {
    const m = c.message;
    events.push(chunk(c.index, { role: 'assistant', content: '' }));
    if (m.reasoning_content !== undefined) events.push(chunk(c.index, { reasoning_content: m.reasoning_content }));
    if (m.content) events.push(chunk(c.index, { content: m.content }));
    m.tool_calls?.forEach((call, i) => events.push(chunk(c.index, { tool_calls: [{ index: i, ...call }] })));
    events.push(chunk(c.index, {}, c.finish_reason, c.stop_reason));
  }
  if (o.usage) events.push(event({ ...o.head, object: 'chat.completion.chunk', choices: [], usage: o.usage }));
  events.push('data: [DONE]\n\n');
  return events;
}
