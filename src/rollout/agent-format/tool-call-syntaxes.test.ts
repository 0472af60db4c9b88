import { describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { LLAMA3_INSTRUCT_TEMPLATE } from '../../model/tokenizer/testing/tokenizer-dirs.ts';
import { resolveRolloutConfig } from '../config.ts';
import { ChatTemplateError } from '../chat-format.ts';
import { glm45Dir, llama31ToolsDir } from '../../model/tokenizer/testing/tool-tokenizer-dirs.ts';
import { toolCallSyntaxOf } from './tool-call-syntax.ts';

/**
 * The tools format over Llama-3.1's and GLM-4.5's published templates (docs/agent-format.md): the
 * syntax each template writes is found from its text, a call written as the template writes it
 * reads back as that call, and every way a turn can fail names its cause.
 */
const agentOf = (dir: string, thinking: boolean, env = 'kv-ledger') =>
  resolveRolloutConfig({
    tokenizer: loadTokenizer(dir),
    input: { agentFormat: 'tools', thinking },
    tools: getFamily(env).tools!,
  }).layout.agent!;

describe('the syntax a template writes', () => {
  it('is read from the template itself', () => {
    expect(toolCallSyntaxOf(loadTokenizer('qwen3').chatTemplate)?.name).toBe('hermes');
    expect(toolCallSyntaxOf(loadTokenizer(llama31ToolsDir()).chatTemplate)?.name).toBe('llama3_json');
    expect(toolCallSyntaxOf(loadTokenizer(glm45Dir()).chatTemplate)?.name).toBe('glm45');
    expect(toolCallSyntaxOf(LLAMA3_INSTRUCT_TEMPLATE)).toBeNull(); // Llama 3 (no tools)
    // Hermes' JSON written only inside a double-quoted Jinja string (its quotes escaped).
    const escaped = String.raw`{{- "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>" }}`;
    expect(toolCallSyntaxOf(escaped)?.name).toBe('hermes');
  });
});

describe('Llama-3.1 JSON calls', () => {
  const agent = agentOf(llama31ToolsDir(), false);
  const cause = (text: string) => agent.readAction(text).error?.cause ?? 'ok';

  it('a call written as the template writes it reads back, and renders as the whole turn', () => {
    const text = agent.writeAction(null, { name: 'answer', arguments: { values: ['t', 'throne'] } });
    expect(text).toBe('{"name": "answer", "parameters": {"values": ["t", "throne"]}}');
    const turn = agent.readAction(text);
    expect(turn.error).toBeNull();
    expect(turn.action).toBe('answer t throne');
    expect(turn.callChars).toEqual([0, text.length]);
    expect(agent.historyText(turn, true)).toBe(`<|start_header_id|>assistant<|end_header_id|>\n\n${text}<|eot_id|>`);
    expect(agent.promptText).toBe('<|start_header_id|>assistant<|end_header_id|>\n\n');
    // The tools are declared in the system turn (tools_in_user_message=False), the system prompt after them.
    expect(agent.systemText('you are an agent')).toMatch(
      /^<\|begin_of_text\|><\|start_header_id\|>system<\|end_header_id\|>\n\nEnvironment: ipython\n[\s\S]*"name": "read"[\s\S]*\n\nyou are an agent<\|eot_id\|>$/,
    );
    // <|python_tag|> may open a call; "arguments" is read as "parameters".
    expect(agent.readAction('<|python_tag|>{"name": "read", "parameters": {}}').action).toBe('read');
    expect(agent.readAction('{"name": "read", "arguments": {}}').action).toBe('read');
  });

  it('names what is wrong with a turn that is not exactly one good call', () => {
    const read = '{"name": "read", "parameters": {}}';
    expect(cause('{"name": "read", "parameters": {}')).toBe('bad_json');
    expect(cause('{"name": "read", "parameters": {},}')).toBe('bad_json');
    expect(cause('{"tool": "read"}')).toBe('not_a_call');
    expect(cause('{"name": "read", "parameters": []}')).toBe('not_a_call');
    expect(cause('<|python_tag|>read()')).toBe('not_a_call');
    expect(cause('{"name": "write", "parameters": {}}')).toBe('unknown_tool');
    expect(cause('{"name": "read", "parameters": {"n": 1}}')).toBe('bad_arguments');
    expect(cause('{"name": "answer", "parameters": {"values": "t"}}')).toBe('bad_arguments');
    expect(cause('read')).toBe('no_call');
    expect(cause(`I read on. ${read}`)).toBe('no_call'); // the template writes a call as the whole turn
    expect(cause(`${read}; ${read}`)).toBe('several_calls');
    expect(cause(`${read}\n${read}`)).toBe('several_calls');
    expect(cause(`<think>\n${read}\n</think>\n\nok`)).toBe('call_in_thinking');
    expect(cause('<think>\nhmm')).toBe('unclosed_thinking');
    expect(cause(` ${read} `)).toBe('ok');
  });

  it('thinking on is refused: the template renders no thinking block', () => {
    expect(() => agentOf(llama31ToolsDir(), true)).toThrow(ChatTemplateError);
    expect(() => agentOf(llama31ToolsDir(), true)).toThrow(/renders no thinking block; use --thinking off/);
  });
});

describe('GLM-4.5 XML-style calls', () => {
  const on = agentOf(glm45Dir(), true);
  const off = agentOf(glm45Dir(), false);
  const cause = (text: string) => on.readAction(text).error?.cause ?? 'ok';

  it('a call written as the template writes it reads back, with its reasoning', () => {
    const text = on.writeAction('I answer.', { name: 'answer', arguments: { values: ['t', 'throne'] } });
    const call = '<tool_call>answer\n<arg_key>values</arg_key>\n<arg_value>["t", "throne"]</arg_value>\n</tool_call>';
    expect(text).toBe(`\n<think>I answer.</think>\n${call}`);
    const turn = on.readAction(text);
    expect(turn.error).toBeNull();
    expect(turn.reasoning).toBe('I answer.');
    expect(turn.action).toBe('answer t throne');
    expect(text.slice(...turn.callChars!)).toBe(call);
    // Reasoning is kept until a user query follows; then the template writes an empty block.
    expect(on.historyText(turn, true)).toBe(`<|assistant|>${text}`);
    expect(on.historyText(turn, false)).toBe(`<|assistant|>\n<think></think>\n${call}`);
    expect(on.promptText).toBe('<|assistant|>');
  });

  it('thinking off: the prompt holds the empty thinking block, user turns end with /nothink', () => {
    expect(off.promptText).toBe('<|assistant|>\n<think></think>');
    expect(off.writeAction('ignored', { name: 'read', arguments: {} })).toBe('\n<tool_call>read\n</tool_call>');
    expect(off.format.text.user).toEqual({ open: '<|user|>\n', close: '/nothink' });
    expect(on.format.text.user).toEqual({ open: '<|user|>\n', close: '' });
  });

  it('a string parameter’s value is the text as written, any other is JSON', () => {
    const shell = agentOf(glm45Dir(), false, 'shell-ledger');
    const bash = (v: string) =>
      shell.readAction(`\n<tool_call>bash\n<arg_key>command</arg_key>\n<arg_value>${v}</arg_value>\n</tool_call>`);
    expect(bash('ls -la').action).toBe('ls -la');
    expect(bash('[1, 2]').action).toBe('[1, 2]');
    expect(bash('echo "a\nb"').action).toBe('echo "a\nb"');
    expect(shell.writeAction(null, { name: 'bash', arguments: { command: 'echo "x"' } })).toBe(
      '\n<tool_call>bash\n<arg_key>command</arg_key>\n<arg_value>echo "x"</arg_value>\n</tool_call>',
    );
  });

  it('names what is wrong with a turn that is not exactly one good call', () => {
    const read = '<tool_call>read\n</tool_call>';
    const answer = (v: string) =>
      `<tool_call>answer\n<arg_key>values</arg_key>\n<arg_value>${v}</arg_value>\n</tool_call>`;
    expect(cause(answer('[t, throne]'))).toBe('bad_json');
    expect(cause('<tool_call>read\n')).toBe('bad_json');
    expect(cause('<tool_call>{"name": "read", "arguments": {}}</tool_call>')).toBe('not_a_call');
    expect(cause('<tool_call>read\nvalues = 1\n</tool_call>')).toBe('not_a_call');
    expect(cause('<tool_call>write\n</tool_call>')).toBe('unknown_tool');
    expect(cause('<tool_call>read\n<arg_key>n</arg_key>\n<arg_value>1</arg_value>\n</tool_call>')).toBe(
      'bad_arguments',
    );
    expect(cause(answer('"t"'))).toBe('bad_arguments');
    expect(cause('read')).toBe('no_call');
    expect(cause(`\n${read}\n${read}`)).toBe('several_calls');
    expect(cause(`\n<think>${read}</think>\nok`)).toBe('call_in_thinking');
    expect(cause('\n<think>hmm')).toBe('unclosed_thinking');
    expect(cause(`\n<think>I read.</think>\n${read}`)).toBe('ok');
    expect(cause(answer('["t"]'))).toBe('ok');
  });
});
