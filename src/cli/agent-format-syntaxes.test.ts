/**
 * The tools format with Llama-3.1's JSON calls and GLM-4.5's XML-style calls (docs/agent-format.md),
 * through the real `crl run` on each model's published chat template: every segment of every record,
 * cut before each generated assistant turn, decodes to exactly what the template renders for the
 * messages in that text (read back by the test's own parser for that model, rendered by Python's
 * jinja2 as transformers sets it up); every generated execution turn is one call of a declared tool
 * written in the model's syntax.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { parseRecordsJsonl, type EpisodeRecord } from '../rollout/record.ts';
import { generatedSpans } from '../rollout/agent-format/testing/generated-spans.ts';
import { glm45Messages } from '../rollout/agent-format/testing/glm45-messages.ts';
import { llama31Messages } from '../rollout/agent-format/testing/llama31-messages.ts';
import {
  pythonJinjaAvailable,
  renderWithPython,
  type Message,
} from '../rollout/agent-format/testing/qwen3-messages.ts';
import { glm45Dir, llama31ToolsDir } from '../model/tokenizer/testing/tool-tokenizer-dirs.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { crl } from './testing/spawn-crl.ts';

const jinja = pythonJinjaAvailable();
if (!jinja)
  process.stderr.write(
    '\n*** SKIPPED the Llama-3.1/GLM-4.5 tools-format records check: python3 with jinja2 is not installed (apt-get install python3-jinja2) ***\n\n',
  );

interface Model {
  dir: () => string;
  /** apply_chat_template's keyword arguments besides messages, tools, add_generation_prompt and enable_thinking. */
  kwargs: Record<string, unknown>;
  read(text: string, thinking: boolean): { messages: Message[]; tools: unknown[] | null; prompt: string };
  /** The generated turn without its stop: the call's name and arguments, read as the model writes them. */
  call(turn: string, thinking: boolean): { name: string; arguments: unknown } | null;
}

const MODELS: Record<'llama-3.1' | 'glm-4.5', Model> = {
  'llama-3.1': {
    dir: llama31ToolsDir,
    // Tools in the system turn (Meta's template's switch; the runtime declares them there).
    kwargs: { bos_token: '<|begin_of_text|>', tools_in_user_message: false },
    read: (text) => llama31Messages(text),
    call(turn) {
      const body = turn.replace(/<\|eot_id\|>$/, '');
      const m = /^\{"name": "([^"]+)", "parameters": (\{[\s\S]*\})\}$/.exec(body);
      return m ? { name: m[1]!, arguments: JSON.parse(m[2]!) as unknown } : null;
    },
  },
  'glm-4.5': {
    dir: glm45Dir,
    kwargs: {},
    read: glm45Messages,
    call(turn, thinking) {
      if (thinking && !turn.startsWith('\n<think>')) return null;
      const body = turn.replace(/<\|observation\|>$/, '').replace(/^\n<think>[\s\S]*?<\/think>/, '');
      const m =
        /^\n<tool_call>([^\n]+)\n((?:<arg_key>[^<]*<\/arg_key>\n<arg_value>[\s\S]*?<\/arg_value>\n)*)<\/tool_call>$/.exec(
          body,
        );
      if (!m) return null;
      const args = Object.fromEntries(
        [...m[2]!.matchAll(/<arg_key>([^<]*)<\/arg_key>\n<arg_value>([\s\S]*?)<\/arg_value>\n/g)].map(([, k, v]) => [
          k,
          v,
        ]),
      );
      return { name: m[1]!, arguments: args };
    },
  },
};

function checkRecords(model: Model, records: readonly EpisodeRecord[], thinking: boolean): number {
  const { tokenizer, chatTemplate } = loadTokenizer(model.dir());
  let turns = 0;
  for (const r of records) {
    expect(r.agentFormat).toBe('tools');
    for (const s of r.segments) {
      for (const [start, end] of generatedSpans(s.lossMask)) {
        turns++;
        const prefix = tokenizer.decode(s.tokens.slice(0, start));
        const { messages, tools } = model.read(prefix, thinking);
        expect(tools, 'the system turn declares tools').not.toBeNull();
        const rendered = renderWithPython({
          template: chatTemplate,
          messages,
          tools,
          enableThinking: thinking,
          kwargs: model.kwargs,
        });
        expect(prefix, `${r.episodeId} segment ${s.index} before token ${start}`).toBe(rendered);
        if (s.kind !== 'execution') continue;
        const turn = tokenizer.decode(s.tokens.slice(start, end));
        const call = model.call(turn, thinking);
        expect(call, turn).not.toBeNull();
        const names = (tools as { function: { name: string } }[]).map((t) => t.function.name);
        expect(names).toContain(call!.name);
      }
    }
  }
  return turns;
}

const run = (dir: string, thinking: 'on' | 'off', env = 'kv-ledger') => {
  const out = join(mkdtempSync(join(tmpdir(), 'crl-syntax-')), 'records.jsonl');
  const r = crl([
    ...['run', '--env', env, '--policy', 'expert', '--tokenizer', dir, '--agent-format', 'tools'],
    ...['--thinking', thinking, '--episodes', '2', '--windows', '4', '--seed', '3', '--out', out],
  ]);
  expect(r.code, r.stderr).toBe(0);
  return parseRecordsJsonl(readFileSync(out, 'utf8'));
};

describe.skipIf(!jinja)('crl run --agent-format tools on Llama-3.1 and GLM-4.5 templates', () => {
  const cases: ['llama-3.1' | 'glm-4.5', 'on' | 'off'][] = [
    ['llama-3.1', 'off'],
    ['glm-4.5', 'on'],
    ['glm-4.5', 'off'],
  ];
  for (const [name, thinking] of cases) {
    it(`${name}, thinking ${thinking}: records equal the template rendering everywhere`, () => {
      const model = MODELS[name];
      const records = run(model.dir(), thinking);
      expect(records.every((r) => r.outcome === 'success')).toBe(true);
      expect(records.some((r) => r.compactions > 0)).toBe(true);
      const turns = checkRecords(model, records, thinking === 'on');
      expect(turns).toBe(records.reduce((n, r) => n + r.turns!.length, 0));
      for (const t of records.flatMap((r) => r.turns!))
        if (t.stage === 'act') expect(t.call?.parsed, JSON.stringify(t)).toBe(true);
    }, 180_000);
  }

  // Shell output has newlines and quotes: Llama 3.1's template renders a tool result as a JSON string.
  it.skipIf(!sandboxAvailable('shell-ledger in Llama-3.1’s tools format'))(
    'llama-3.1, shell-ledger, thinking off',
    () => {
      const records = run(MODELS['llama-3.1'].dir(), 'off', 'shell-ledger');
      expect(records.filter((r) => r.outcome === 'success').length).toBeGreaterThan(0);
      checkRecords(MODELS['llama-3.1'], records, false);
      const text = loadTokenizer(MODELS['llama-3.1'].dir()).tokenizer.decode(records[0]!.segments[0]!.tokens);
      expect(text).toMatch(/<\|start_header_id\|>ipython<\|end_header_id\|>\n\n"[^"]*\\n/); // an escaped newline
    },
    240_000,
  );

  // Shell commands are string arguments: GLM-4.5 writes them as they are, quotes and newlines included.
  it.skipIf(!sandboxAvailable('shell-ledger in GLM-4.5’s tools format'))(
    'glm-4.5, shell-ledger, thinking on and off',
    () => {
      for (const thinking of ['on', 'off'] as const) {
        const records = run(MODELS['glm-4.5'].dir(), thinking, 'shell-ledger');
        expect(records.filter((r) => r.outcome === 'success').length).toBeGreaterThan(0);
        checkRecords(MODELS['glm-4.5'], records, thinking === 'on');
      }
    },
    240_000,
  );
});
