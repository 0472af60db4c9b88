import type { ToolCall } from '../../contracts/index.ts';
import type { ParsedCalls, ToolCallSyntax, ToolSchemas } from './tool-call-types.ts';

/**
 * GLM-4.5 / 4.6 XML-style calls, as its template renders `tool_calls`:
 *
 *   <tool_call>answer
 *   <arg_key>values</arg_key>
 *   <arg_value>["t", "throne"]</arg_value>
 *   </tool_call>
 *
 * A value is written raw when it is a string and as JSON otherwise, so reading one back needs the
 * parameter's declared type: a string parameter's value is the text as written; any other is
 * JSON (an undeclared parameter: JSON when it parses, else the text).
 */
const ARG = /^\s*<arg_key>([\s\S]*?)<\/arg_key>\s*<arg_value>([\s\S]*?)<\/arg_value>/;

function declaredType(tools: ToolSchemas | undefined, name: string, key: string): unknown {
  const props = (tools?.find((t) => t.function.name === name)?.function.parameters as { properties?: unknown })
    ?.properties;
  return typeof props === 'object' && props !== null
    ? (props as Record<string, { type?: unknown } | undefined>)[key]?.type
    : undefined;
}

function readCall(
  body: string,
  tools: ToolSchemas | undefined,
): { call: ToolCall } | { cause: 'bad_json' | 'not_a_call'; detail: string } {
  const nameEnd = body.search(/<arg_key>|\n|$/);
  const name = body.slice(0, nameEnd).trim();
  if (name === '' || /[<>{}"\s]/.test(name))
    return { cause: 'not_a_call', detail: 'no function name after <tool_call>' };
  const args: Record<string, unknown> = {};
  let rest = body.slice(nameEnd);
  for (let m = ARG.exec(rest); m !== null; m = ARG.exec(rest)) {
    const key = m[1]!.trim();
    const raw = m[2]!;
    const type = declaredType(tools, name, key);
    if (type === 'string') args[key] = raw;
    else {
      try {
        args[key] = JSON.parse(raw);
      } catch (e) {
        if (type !== undefined)
          return { cause: 'bad_json', detail: `argument ${key} (${JSON.stringify(type)}): ${(e as Error).message}` };
        args[key] = raw;
      }
    }
    rest = rest.slice(m[0].length);
  }
  if (rest.trim() !== '')
    return {
      cause: 'not_a_call',
      detail: `not <arg_key>…</arg_key><arg_value>…</arg_value>: ${rest.trim().slice(0, 40)}`,
    };
  return { call: { name, arguments: args } };
}

export const glm45Syntax: ToolCallSyntax = {
  name: 'glm45',
  detect: (template) => template.includes('<tool_call>') && template.includes('<arg_key>'),
  mentionsCall: (text) => text.includes('<tool_call>'),
  parse(text, tools) {
    const out: ParsedCalls = { calls: [], problems: [] };
    const re = /<tool_call>([\s\S]*?)(<\/tool_call>|$)/g;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const start = m.index;
      const end = m.index + m[0].length;
      if (m[2] === '') {
        out.problems.push({ cause: 'bad_json', detail: 'a <tool_call> without its </tool_call>', start, end });
        break;
      }
      const r = readCall(m[1]!, tools);
      if ('call' in r) out.calls.push({ call: r.call, start, end });
      else out.problems.push({ ...r, start, end });
    }
    return out;
  },
};
