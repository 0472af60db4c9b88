import type { Message } from './qwen3-messages.ts';

/**
 * The tools-format tests' own reading of a GLM-4.5 rendering back into the messages and tools it
 * was rendered from, written from the model's published chat template, not from the runtime's code.
 * A call's values are strings as written when the tool declares a string, JSON otherwise.
 */

type Tool = { function: { name: string; parameters: { properties: Record<string, { type?: string }> } } };

const TOOLS = /^<\|system\|>\n# Tools\n\n[\s\S]*?<tools>\n([\s\S]*?)<\/tools>\n\n[\s\S]*?\.\.\.\n<\/tool_call>/;
const CALL =
  /\n<tool_call>([^\n]+)\n((?:<arg_key>[\s\S]*?<\/arg_key>\n<arg_value>[\s\S]*?<\/arg_value>\n)*)<\/tool_call>/g;
const ARG = /<arg_key>([\s\S]*?)<\/arg_key>\n<arg_value>([\s\S]*?)<\/arg_value>\n/g;

/** Messages and tools of a rendering that ends with a generation prompt (which it returns). */
export function glm45Messages(
  text: string,
  thinking: boolean,
): { messages: Message[]; tools: unknown[] | null; prompt: string } {
  if (!text.startsWith('[gMASK]<sop>')) throw new Error('a GLM-4.5 rendering starts with [gMASK]<sop>');
  let rest = text.slice('[gMASK]<sop>'.length);
  let tools: Tool[] | null = null;
  const block = TOOLS.exec(rest);
  if (block) {
    tools = block[1]!
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Tool);
    rest = rest.slice(block[0].length);
  }
  const parts = rest.split(/(<\|system\|>|<\|user\|>|<\|assistant\|>|<\|observation\|>)/).slice(1);
  const messages: Message[] = [];
  let prompt = '';
  for (let i = 0; i < parts.length; i += 2) {
    const tag = parts[i]!;
    const body = parts[i + 1]!;
    if (i + 2 >= parts.length) {
      if (tag !== '<|assistant|>') throw new Error(`a rendering ends with ${tag}, not a generation prompt`);
      prompt = tag + body;
      break;
    }
    if (tag === '<|system|>' || tag === '<|user|>') {
      let content = body.replace(/^\n/, '');
      if (tag === '<|user|>' && !thinking) content = content.replace(/\/nothink$/, '');
      messages.push({ role: tag === '<|user|>' ? 'user' : 'system', content });
    } else if (tag === '<|observation|>') {
      for (const r of body.matchAll(/\n<tool_response>\n([\s\S]*?)\n<\/tool_response>/g))
        messages.push({ role: 'tool', content: r[1]! });
    } else {
      const think = /^\n<think>([\s\S]*?)<\/think>/.exec(body)!;
      let after = body.slice(think[0].length);
      const calls: unknown[] = [];
      after = after.replace(CALL, (_, name: string, args: string) => {
        const props = tools?.find((t) => t.function.name === name)?.function.parameters.properties ?? {};
        const values: Record<string, unknown> = {};
        for (const [, k, v] of args.matchAll(ARG))
          values[k!] = props[k!]?.type === 'string' ? v! : (JSON.parse(v!) as unknown);
        calls.push({ type: 'function', function: { name, arguments: values } });
        return '';
      });
      messages.push({
        role: 'assistant',
        content: after.replace(/^\n/, ''),
        ...(think[1] ? { reasoning_content: think[1] } : {}),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
    }
  }
  return { messages, tools, prompt };
}
