import { jsonCall, jsonValueEnd } from './json-call.ts';
import type { ParsedCalls, ToolCallSyntax } from './tool-call-types.ts';

/**
 * Llama 3.1 / 3.2 / 3.3 JSON calls: the assistant turn is the call itself, `{"name": "read",
 * "parameters": {}}`, as Meta's template renders `tool_calls` (it renders the turn's content only
 * without calls). `<|python_tag|>` opens a call in Meta's prompt format (the template writes it
 * for built-in tools only); a model may write it before a JSON call too, so a call starts either
 * there or at the turn's first character. Several calls are JSON objects one after another
 * (separated by whitespace or `;`), which a turn of one call reads as several_calls.
 */
const PYTHON_TAG = '<|python_tag|>';

export const llama3JsonSyntax: ToolCallSyntax = {
  name: 'llama3_json',
  // Meta's template writes the call's JSON itself: '"parameters": ' + tool_call.arguments | tojson.
  detect: (template) =>
    template.includes('"parameters": ') && template.includes('tool_calls') && !template.includes('<tool_call>'),
  mentionsCall: (text) => text.includes(PYTHON_TAG) || /\{\s*"name"\s*:/.test(text),
  templateKwargs: {
    // The runtime declares the tools in the system turn every window starts with (Meta's template
    // otherwise moves them into the first user message).
    tools_in_user_message: false,
  },
  parse(text) {
    const out: ParsedCalls = { calls: [], problems: [] };
    const tag = text.indexOf(PYTHON_TAG);
    const skip = (i: number) => {
      while (i < text.length && /\s/.test(text[i]!)) i++;
      return i;
    };
    let at = tag >= 0 ? skip(tag + PYTHON_TAG.length) : skip(0);
    let start = tag >= 0 ? tag : at;
    while (text[at] === '{') {
      const end = jsonValueEnd(text, at);
      if (end < 0) {
        out.problems.push({
          cause: 'bad_json',
          detail: 'the call’s JSON object does not end',
          start,
          end: text.length,
        });
        break;
      }
      const r = jsonCall(text.slice(at, end));
      if ('call' in r) out.calls.push({ call: r.call, start, end });
      else out.problems.push({ ...r, start, end });
      at = skip(end);
      if (text[at] === ';') at = skip(at + 1);
      start = at;
    }
    if (tag >= 0 && out.calls.length + out.problems.length === 0)
      out.problems.push({ cause: 'not_a_call', detail: `no JSON object after ${PYTHON_TAG}`, start, end: at });
    return out;
  },
};
