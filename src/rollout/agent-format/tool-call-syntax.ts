import type { ToolCall } from '../../contracts/index.ts';

/**
 * Tool-call syntaxes (docs/agent-format.md): how a model's chat template writes a call in an
 * assistant turn, and the one parser for each. The syntax is chosen from the template itself
 * (a registry, not a branch per model); a template whose syntax is not here is refused by name.
 */

/** Why a turn's calls could not be read (counted per iteration as rollout/tool_call_errors/<cause>). */
export type CallProblem = 'bad_json' | 'not_a_call';

export interface ParsedCalls {
  /** Well-formed calls in order, with each call's character span in the text. */
  calls: { call: ToolCall; start: number; end: number }[];
  /** Blocks that looked like calls but were not well formed. */
  problems: { cause: CallProblem; detail: string; start: number; end: number }[];
}

export interface ToolCallSyntax {
  readonly name: string;
  /** True when this template writes calls in this syntax (read from the template's text). */
  detect(template: string): boolean;
  /** Every call-shaped block of a turn's content (after any thinking block). */
  parse(text: string): ParsedCalls;
  /** Does this text hold the start of a call (a call inside a thinking block is an error)? */
  mentionsCall(text: string): boolean;
}

/** `{"name": ..., "arguments": {...}}`, the JSON body Hermes-style and Llama-3.1 calls share. */
function jsonCall(body: string): { call: ToolCall } | { cause: CallProblem; detail: string } {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch (e) {
    return { cause: 'bad_json', detail: (e as Error).message };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { cause: 'not_a_call', detail: 'the call is not a JSON object' };
  const o = v as Record<string, unknown>;
  let args = o.arguments ?? o.parameters;
  // Some models write the arguments as a JSON string (OpenAI's wire format does).
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch (e) {
      return { cause: 'bad_json', detail: `arguments: ${(e as Error).message}` };
    }
  }
  if (typeof o.name !== 'string' || o.name === '') return { cause: 'not_a_call', detail: 'no "name" string' };
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return { cause: 'not_a_call', detail: 'no "arguments" object' };
  return { call: { name: o.name, arguments: args as Record<string, unknown> } };
}

/** Qwen2.5 / Qwen3 / Hermes: `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, one block per call. */
const hermes: ToolCallSyntax = {
  name: 'hermes',
  detect: (template) => template.includes('<tool_call>') && template.includes('</tool_call>'),
  mentionsCall: (text) => text.includes('<tool_call>'),
  parse(text) {
    const out: ParsedCalls = { calls: [], problems: [] };
    const re = /<tool_call>([\s\S]*?)(<\/tool_call>|$)/g;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const start = m.index;
      const end = m.index + m[0].length;
      if (m[2] === '') {
        out.problems.push({ cause: 'bad_json', detail: 'a <tool_call> without its </tool_call>', start, end });
        break;
      }
      const r = jsonCall(m[1]!.trim());
      if ('call' in r) out.calls.push({ call: r.call, start, end });
      else out.problems.push({ ...r, start, end });
    }
    return out;
  },
};

const SYNTAXES: ToolCallSyntax[] = [hermes];

/** A library user's syntax (a template the built-ins do not know). */
export function registerToolCallSyntax(syntax: ToolCallSyntax): void {
  if (SYNTAXES.some((s) => s.name === syntax.name)) throw new Error(`tool-call syntax ${syntax.name} is registered`);
  SYNTAXES.unshift(syntax);
}

/** The syntax a template writes calls in, or null when no registered one matches. */
export function toolCallSyntaxOf(template: string): ToolCallSyntax | null {
  return SYNTAXES.find((s) => s.detect(template)) ?? null;
}

export function knownToolCallSyntaxes(): string[] {
  return SYNTAXES.map((s) => s.name);
}
