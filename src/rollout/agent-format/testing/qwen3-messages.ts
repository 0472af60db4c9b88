import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The tools-format tests' own reading of a Qwen3 rendering back into the messages and tools it was
 * rendered from, written from the template's published format (not from the runtime's code), and
 * the independent renderer (render_chat.py, Python's jinja2 as transformers sets it up).
 */

export type Message = Record<string, unknown> & { role: string; content: string };

const TURN = /<\|im_start\|>(system|user|assistant)\n([\s\S]*?)<\|im_end\|>\n/gy;

/** Messages and tools of a rendering that ends right after a generation prompt (which it returns). */
export function qwen3Messages(text: string): { messages: Message[]; tools: unknown[] | null; prompt: string } {
  const messages: Message[] = [];
  let tools: unknown[] | null = null;
  TURN.lastIndex = 0;
  let at = 0;
  for (let m = TURN.exec(text); m !== null; m = TURN.exec(text)) {
    at = TURN.lastIndex;
    const [, role, body] = m as unknown as [string, string, string];
    if (role === 'system') {
      const cut = body.indexOf('\n\n# Tools\n\n');
      const toolBlock = /<tools>\n([\s\S]*?)\n<\/tools>/.exec(body);
      if (toolBlock) tools = toolBlock[1]!.split('\n').map((l) => JSON.parse(l) as unknown);
      messages.push({ role, content: cut >= 0 ? body.slice(0, cut) : body });
    } else if (role === 'user' && body.startsWith('<tool_response>\n') && body.endsWith('\n</tool_response>')) {
      for (const part of body
        .slice('<tool_response>\n'.length, -'\n</tool_response>'.length)
        .split('\n</tool_response>\n<tool_response>\n'))
        messages.push({ role: 'tool', content: part });
    } else if (role === 'assistant') {
      const think = /^<think>\n([\s\S]*?)\n<\/think>\n\n/.exec(body);
      let rest = think ? body.slice(think[0].length) : body;
      const calls: unknown[] = [];
      rest = rest.replace(/\n?<tool_call>\n([\s\S]*?)\n<\/tool_call>/g, (_, json: string) => {
        const c = JSON.parse(json) as { name: string; arguments: unknown };
        calls.push({ type: 'function', function: { name: c.name, arguments: c.arguments } });
        return '';
      });
      messages.push({
        role,
        content: rest,
        ...(think ? { reasoning_content: think[1] } : {}),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
    } else messages.push({ role, content: body });
  }
  return { messages, tools, prompt: text.slice(at) };
}

/** Debian's python3, as CI installs python3-jinja2 for it (a python on PATH may be another). */
const PYTHON = '/usr/bin/python3';
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'render_chat.py');

/** apply_chat_template(messages, tools, add_generation_prompt=True, enable_thinking) in Python's jinja2. */
export function renderWithPython(options: {
  template: string;
  messages: readonly Message[];
  tools: readonly unknown[] | null;
  enableThinking: boolean;
  /** apply_chat_template's other keyword arguments (bos_token, a template's own switches). */
  kwargs?: Readonly<Record<string, unknown>>;
}): string {
  const r = spawnSync(PYTHON, [SCRIPT], {
    input: JSON.stringify({
      template: options.template,
      messages: options.messages,
      tools: options.tools,
      add_generation_prompt: true,
      enable_thinking: options.enableThinking,
      kwargs: options.kwargs ?? {},
    }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`render_chat.py failed: ${r.stderr}`);
  return r.stdout;
}

/** True when python3 with jinja2 runs here (Debian: python3-jinja2). */
export function pythonJinjaAvailable(): boolean {
  return spawnSync(PYTHON, ['-c', 'import jinja2'], { stdio: 'ignore', timeout: 30_000 }).status === 0;
}
