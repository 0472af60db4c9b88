import { describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../config.ts';
import { RolloutConfigError } from '../config.ts';
import { ChatTemplateError } from '../chat-format.ts';

const qwen3 = loadTokenizer('qwen3');
const layoutOf = (thinking: boolean, env = 'kv-ledger') =>
  resolveRolloutConfig({
    tokenizer: qwen3,
    input: { agentFormat: 'tools', thinking },
    tools: getFamily(env).tools!,
  }).layout;

describe('the tools format over Qwen3’s template', () => {
  const agent = layoutOf(true).agent!;

  it('reads a call written as the template writes it, with its reasoning and its span', () => {
    const text = agent.writeAction('I read on.', { name: 'answer', arguments: { values: ['t', 'throne'] } });
    expect(text).toBe(
      '<think>\nI read on.\n</think>\n\n<tool_call>\n{"name": "answer", "arguments": {"values": ["t", "throne"]}}\n</tool_call>',
    );
    const turn = agent.readAction(text);
    expect(turn.error).toBeNull();
    expect(turn.reasoning).toBe('I read on.');
    expect(turn.action).toBe('answer t throne');
    expect(text.slice(...turn.callChars!)).toMatch(/^<tool_call>[\s\S]*<\/tool_call>$/);
    // Its history rendering is the text itself (kept reasoning) or the call alone (dropped).
    expect(agent.historyText(turn, true)).toBe(`<|im_start|>assistant\n${text}<|im_end|>\n`);
    expect(agent.historyText(turn, false)).toBe(`<|im_start|>assistant\n${text.slice(turn.contentStart)}<|im_end|>\n`);
  });

  it('names what is wrong with a turn that is not exactly one good call', () => {
    const cause = (text: string) => agent.readAction(text).error?.cause;
    expect(cause('<tool_call>\n{"name": "read", "arguments": {}\n</tool_call>')).toBe('bad_json');
    expect(cause('<tool_call>\n["read"]\n</tool_call>')).toBe('not_a_call');
    expect(cause('<tool_call>\n{"name": "write", "arguments": {}}\n</tool_call>')).toBe('unknown_tool');
    expect(cause('<tool_call>\n{"name": "read", "arguments": {"n": 1}}\n</tool_call>')).toBe('bad_arguments');
    expect(cause('<tool_call>\n{"name": "answer", "arguments": {"values": "t"}}\n</tool_call>')).toBe('bad_arguments');
    expect(cause('read')).toBe('no_call');
    const call = '<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>';
    expect(cause(`${call}\n${call}`)).toBe('several_calls');
    expect(cause(`<think>\n${call}\n</think>\n\nok`)).toBe('call_in_thinking');
    expect(cause('<think>\nhmm')).toBe('unclosed_thinking');
    expect(agent.readAction('<tool_call>\n{"name": "read", "arguments": {}}').error?.cause).toBe('bad_json');
    expect(agent.readAction(`${call}`).error).toBeNull();
  });

  it('with thinking off the generation prompt carries the empty thinking block, and a call is written without one', () => {
    const off = layoutOf(false).agent!;
    expect(off.promptText).toBe('<|im_start|>assistant\n<think>\n\n</think>\n\n');
    expect(off.writeAction('ignored', { name: 'read', arguments: {} })).toBe(
      '<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>',
    );
    expect(agent.promptText).toBe('<|im_start|>assistant\n');
  });

  it('shell tasks: bash with a command, submit without arguments', () => {
    const shell = layoutOf(false, 'shell-ledger').agent!;
    const t = shell.readAction('<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>');
    expect(t.action).toBe('ls -la');
    expect(shell.readAction('<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>').action).toBe('submit');
    expect(
      shell.readAction('<tool_call>\n{"name": "bash", "arguments": {"command": " "}}\n</tool_call>').error?.cause,
    ).toBe('bad_arguments');
  });

  it('refuses what cannot work, before anything runs', () => {
    expect(() =>
      resolveRolloutConfig({
        tokenizer: loadTokenizer('word'),
        input: { agentFormat: 'tools' },
        tools: getFamily('kv-ledger').tools!,
      }),
    ).toThrow(ChatTemplateError);
    expect(() => resolveRolloutConfig({ tokenizer: qwen3, input: { agentFormat: 'tools' } })).toThrow(
      /declares no tools/,
    );
    expect(() => resolveRolloutConfig({ tokenizer: qwen3, input: { thinking: true } })).toThrow(RolloutConfigError);
    const noTools = {
      ...qwen3,
      name: 'plain',
      chatTemplate:
        '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}',
    };
    expect(() =>
      resolveRolloutConfig({
        tokenizer: noTools,
        input: { agentFormat: 'tools' },
        tools: getFamily('kv-ledger').tools!,
      }),
    ).toThrow(/syntax this runtime does not parse \(known: glm45, hermes, llama3_json\)/);
  });
});
