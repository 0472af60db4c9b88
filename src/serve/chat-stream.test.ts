import { describe, expect, it } from 'vitest';
import { chatStreamEvents } from './chat-stream.ts';

/** The chunks of a streamed chat completion reassemble into its message (OpenAI's delta rules). */
describe('chatStreamEvents', () => {
  it('role, reasoning, content and each call, then the finish reason; usage last; [DONE]', () => {
    const call = { id: 'call_a', type: 'function' as const, function: { name: 'read', arguments: '{}' } };
    const events = chatStreamEvents({
      head: { id: 'chatcmpl-x', created: 1, model: 'm' },
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Reading.', reasoning_content: 'I read.', tool_calls: [call] },
          finish_reason: 'tool_calls',
          stop_reason: 151645,
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
    expect(events.at(-1)).toBe('data: [DONE]\n\n');
    const chunks = events.slice(0, -1).map(
      (e) =>
        JSON.parse(e.replace(/^data: /, '')) as {
          object: string;
          id: string;
          choices: { delta: Record<string, unknown>; finish_reason: string | null }[];
        },
    );
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === 'chatcmpl-x')).toBe(true);
    const deltas = chunks.flatMap((c) => c.choices.map((x) => x.delta));
    expect(deltas).toEqual([
      { role: 'assistant', content: '' },
      { reasoning_content: 'I read.' },
      { content: 'Reading.' },
      { tool_calls: [{ index: 0, ...call }] },
      {},
    ]);
    const finishes = chunks.flatMap((c) => c.choices.map((x) => x.finish_reason));
    expect(finishes).toEqual([null, null, null, null, 'tool_calls']);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: 5 } });
  });
});
