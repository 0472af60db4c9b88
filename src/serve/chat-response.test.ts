import { describe, expect, it } from 'vitest';
import { getFamily } from '../env/registry.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { glm45Dir, llama31ToolsDir } from '../model/tokenizer/testing/tool-tokenizer-dirs.ts';
import { toolCallSyntaxOf } from '../rollout/agent-format/tool-call-syntax.ts';
import { chatMessage } from './chat-response.ts';

/**
 * The chat route's assistant message from generated text (OpenAI's and vLLM's response schema):
 * calls in the template's syntax become tool_calls with JSON-string arguments, the thinking block
 * reasoning_content, the rest content (null when nothing is left).
 */
const specs = getFamily('kv-ledger').tools!.tools;
const shell = getFamily('shell-ledger').tools!.tools;
const toolsOf = (template: string, tools = specs) => ({ syntax: toolCallSyntaxOf(template)!, specs: tools });
const qwen3 = toolsOf(loadTokenizer('qwen3').chatTemplate);

describe('chatMessage', () => {
  it('Qwen3: a call after a thinking block', () => {
    const { message, calledTools } = chatMessage({
      text: '<think>\nI read on.\n</think>\n\n<tool_call>\n{"name": "answer", "arguments": {"values": ["t"]}}\n</tool_call>',
      tools: qwen3,
    });
    expect(calledTools).toBe(true);
    expect(message).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'I read on.',
      tool_calls: [
        {
          id: expect.stringMatching(/^call_[A-Za-z0-9]+$/) as string,
          type: 'function',
          function: { name: 'answer', arguments: '{"values":["t"]}' },
        },
      ],
    });
  });

  it('text beside the calls stays content; several calls keep their order and their own ids', () => {
    const call = (n: string) => `<tool_call>\n{"name": "${n}", "arguments": {}}\n</tool_call>`;
    const { message } = chatMessage({ text: `Reading twice.\n${call('read')}\n${call('read')}`, tools: qwen3 });
    expect(message.content).toBe('Reading twice.');
    expect(message.tool_calls!.map((c) => c.function.name)).toEqual(['read', 'read']);
    expect(new Set(message.tool_calls!.map((c) => c.id)).size).toBe(2);
    expect(message.reasoning_content).toBeUndefined();
  });

  it('no call, a call that does not parse, or no tools asked for: content as generated', () => {
    expect(chatMessage({ text: 'the answer is 4', tools: qwen3 })).toEqual({
      message: { role: 'assistant', content: 'the answer is 4' },
      calledTools: false,
    });
    const broken = '<tool_call>\n{"name": "read", "arguments": {}\n</tool_call>';
    expect(chatMessage({ text: broken, tools: qwen3 }).message).toEqual({ role: 'assistant', content: broken });
    const call = '<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>';
    expect(chatMessage({ text: call, tools: null }).message).toEqual({ role: 'assistant', content: call });
  });

  it('Llama-3.1 JSON and GLM-4.5 XML-style calls', () => {
    const llama = toolsOf(loadTokenizer(llama31ToolsDir()).chatTemplate);
    const l = chatMessage({ text: '{"name": "answer", "parameters": {"values": ["t", "x"]}}', tools: llama });
    expect(l.message.content).toBeNull();
    expect(l.message.tool_calls![0]!.function).toEqual({ name: 'answer', arguments: '{"values":["t","x"]}' });
    const glm = toolsOf(loadTokenizer(glm45Dir()).chatTemplate, shell);
    const g = chatMessage({
      text: '\n<think>List.</think>\n<tool_call>bash\n<arg_key>command</arg_key>\n<arg_value>ls -la</arg_value>\n</tool_call>',
      tools: glm,
    });
    expect(g.message.reasoning_content).toBe('List.');
    expect(g.message.content).toBeNull();
    expect(g.message.tool_calls![0]!.function).toEqual({ name: 'bash', arguments: '{"command":"ls -la"}' });
  });
});
