import { jsonCall } from './json-call.ts';
import type { ParsedCalls, ToolCallSyntax } from './tool-call-types.ts';

/** Qwen2.5 / Qwen3 / Hermes: `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, one block per call. */
export const hermesSyntax: ToolCallSyntax = {
  name: 'hermes',
  // GLM-4.5 writes <tool_call> too, around its own syntax; Hermes templates write the JSON's
  // "arguments" key (in a single-quoted Jinja string, or escaped in a double-quoted one).
  detect: (template) =>
    template.includes('<tool_call>') &&
    template.includes('</tool_call>') &&
    (template.includes('"arguments"') || template.includes('\\"arguments\\"')),
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
