import { randomBytes } from 'node:crypto';
import type { ToolCallSyntax, ToolSchemas } from '../rollout/agent-format/tool-call-syntax.ts';

/**
 * The assistant message of a chat completion from the text the model generated, as OpenAI's and
 * vLLM's chat responses carry it: a leading thinking block as `reasoning_content`; with tools, the
 * calls in the template's syntax (parsed by the same parsers as the tools format,
 * rollout/agent-format/tool-call-syntax.ts) as `tool_calls`, their arguments a JSON string, and
 * `content` the text around them (null when none). A turn whose calls do not all parse is
 * returned as content, as vLLM's parsers return text they cannot read.
 */

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessageOut {
  role: 'assistant';
  content: string | null;
  reasoning_content?: string;
  tool_calls?: ChatToolCall[];
}

/** vLLM's and OpenAI's call ids: `call_` and random letters and digits. */
function callId(): string {
  return `call_${randomBytes(12).toString('base64url').replace(/[-_]/g, '0')}`;
}

/** `<think>…</think>` at the start (after whitespace): its text and where the content starts; null without a closed block. */
function thinkingBlock(text: string): { reasoning: string; rest: string } | null {
  const lead = text.length - text.trimStart().length;
  if (!text.startsWith('<think>', lead)) return null;
  const end = text.indexOf('</think>', lead);
  if (end < 0) return null;
  return {
    reasoning: text.slice(lead + '<think>'.length, end).replace(/^\n+|\n+$/g, ''),
    rest: text.slice(end + '</think>'.length).replace(/^\n+/, ''),
  };
}

export function chatMessage(o: {
  text: string;
  /** The template's call syntax, with the request's tools; null: no tools asked for (or tool_choice none). */
  tools: { syntax: ToolCallSyntax; specs: ToolSchemas } | null;
}): { message: ChatMessageOut; calledTools: boolean } {
  const think = thinkingBlock(o.text);
  const content = think ? think.rest : o.text;
  const base = { role: 'assistant' as const, ...(think ? { reasoning_content: think.reasoning } : {}) };
  const parsed = o.tools ? o.tools.syntax.parse(content, o.tools.specs) : null;
  if (!parsed || parsed.calls.length === 0 || parsed.problems.length > 0)
    return { message: { ...base, content }, calledTools: false };
  let rest = '';
  let at = 0;
  for (const c of parsed.calls) {
    rest += content.slice(at, c.start);
    at = c.end;
  }
  rest = (rest + content.slice(at)).trim();
  return {
    message: {
      ...base,
      content: rest === '' ? null : rest,
      tool_calls: parsed.calls.map(({ call }) => ({
        id: callId(),
        type: 'function',
        function: { name: call.name, arguments: JSON.stringify(call.arguments) },
      })),
    },
    calledTools: true,
  };
}
