import type { Message } from './qwen3-messages.ts';

/**
 * The tools-format tests' own reading of a Llama-3.1 rendering (Meta's template with
 * tools_in_user_message=False) back into the messages and tools it was rendered from, written from
 * the model's published prompt format, not from the runtime's code.
 */

const TURN = /<\|start_header_id\|>(system|user|assistant|ipython)<\|end_header_id\|>\n\n([\s\S]*?)<\|eot_id\|>/y;
const TOOLS_HEAD =
  'You have access to the following functions. To call a function, please respond with JSON for a function call.' +
  'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' +
  'Do not use variables.\n\n';

/** Messages and tools of a rendering that ends right after a generation prompt (which it returns). */
export function llama31Messages(text: string): { messages: Message[]; tools: unknown[] | null; prompt: string } {
  if (!text.startsWith('<|begin_of_text|>')) throw new Error('a Llama-3.1 rendering starts with <|begin_of_text|>');
  const messages: Message[] = [];
  let tools: unknown[] | null = null;
  TURN.lastIndex = '<|begin_of_text|>'.length;
  let at = TURN.lastIndex;
  for (let m = TURN.exec(text); m !== null; m = TURN.exec(text)) {
    at = TURN.lastIndex;
    const [, role, body] = m as unknown as [string, string, string];
    if (role === 'system') {
      let rest = body.replace(
        /^(Environment: ipython\n)?Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n/,
        '',
      );
      if (rest.startsWith(TOOLS_HEAD)) {
        rest = rest.slice(TOOLS_HEAD.length);
        tools = [];
        // Each tool is tojson(indent=4): its closing brace is the only one at column 0.
        for (let end = rest.indexOf('\n}\n\n'); rest.startsWith('{') && end >= 0; end = rest.indexOf('\n}\n\n')) {
          tools.push(JSON.parse(rest.slice(0, end + 2)) as unknown);
          rest = rest.slice(end + 4);
        }
      }
      messages.push({ role, content: rest });
    } else if (role === 'ipython') messages.push({ role: 'tool', content: JSON.parse(body) as string });
    else if (role === 'assistant' && /^\{"name": "[^"]+", "parameters": /.test(body)) {
      const c = JSON.parse(body) as { name: string; parameters: unknown };
      messages.push({
        role,
        content: '',
        tool_calls: [{ type: 'function', function: { name: c.name, arguments: c.parameters } }],
      });
    } else messages.push({ role, content: body });
  }
  return { messages, tools, prompt: text.slice(at) };
}
