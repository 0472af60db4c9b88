/**
 * The tools format end to end (docs/agent-format.md), through the real `crl run`: every segment of
 * every record, cut before each generated assistant turn, decodes to exactly what Qwen3's chat
 * template renders for the messages in that text (read back by the test's own parser, rendered by
 * Python's jinja2 as transformers sets it up, with the tools, the generation prompt and
 * enable_thinking); every generated execution turn is one call of a declared tool with an object
 * of arguments; with thinking on every execution turn starts with <think>.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { parseRecordsJsonl, type EpisodeRecord } from '../rollout/record.ts';
import {
  pythonJinjaAvailable,
  qwen3Messages,
  renderWithPython,
} from '../rollout/agent-format/testing/qwen3-messages.ts';
import { generatedSpans } from '../rollout/agent-format/testing/generated-spans.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { crl } from './testing/spawn-crl.ts';

const tokenizer = loadTokenizer('qwen3');
const jinja = pythonJinjaAvailable();
if (!jinja)
  process.stderr.write(
    '\n*** SKIPPED the tools-format records check: python3 with jinja2 is not installed (apt-get install python3-jinja2) ***\n\n',
  );

function checkRecords(records: readonly EpisodeRecord[], thinking: boolean): { turns: number; segments: number } {
  let turns = 0;
  let segments = 0;
  for (const r of records) {
    expect(r.agentFormat).toBe('tools');
    for (const s of r.segments) {
      segments++;
      for (const [start, end] of generatedSpans(s.lossMask)) {
        turns++;
        const prefix = tokenizer.tokenizer.decode(s.tokens.slice(0, start));
        const { messages, tools } = qwen3Messages(prefix);
        expect(tools, 'the system turn declares tools').not.toBeNull();
        const rendered = renderWithPython({
          template: tokenizer.chatTemplate,
          messages,
          tools,
          enableThinking: thinking,
        });
        expect(prefix, `${r.episodeId} segment ${s.index} before token ${start}`).toBe(rendered);
        if (s.kind !== 'execution') continue;
        const turn = tokenizer.tokenizer.decode(s.tokens.slice(start, end)).replace(/<\|im_end\|>$/, '');
        if (thinking) expect(turn.startsWith('<think>'), turn).toBe(true);
        const body = turn.replace(/^<think>[\s\S]*?<\/think>\n\n/, '');
        const call = /^<tool_call>\n([\s\S]*)\n<\/tool_call>$/.exec(body);
        expect(call, body).not.toBeNull();
        const parsed = JSON.parse(call![1]!) as { name: string; arguments: unknown };
        const names = (tools as { function: { name: string } }[]).map((t) => t.function.name);
        expect(names).toContain(parsed.name);
        expect(
          typeof parsed.arguments === 'object' && parsed.arguments !== null && !Array.isArray(parsed.arguments),
        ).toBe(true);
      }
    }
  }
  return { turns, segments };
}

const run = (env: string, thinking: 'on' | 'off', episodes: number) => {
  const out = join(mkdtempSync(join(tmpdir(), 'crl-tools-')), 'records.jsonl');
  const r = crl([
    ...['run', '--env', env, '--policy', 'expert', '--tokenizer', 'qwen3', '--agent-format', 'tools'],
    ...['--thinking', thinking, '--episodes', String(episodes), '--windows', '4', '--seed', '3', '--out', out],
  ]);
  expect(r.code, r.stderr).toBe(0);
  return parseRecordsJsonl(readFileSync(out, 'utf8'));
};

describe.skipIf(!jinja)('crl run --agent-format tools: records equal the template rendering everywhere', () => {
  for (const thinking of ['on', 'off'] as const) {
    it(`kv-ledger, thinking ${thinking}`, () => {
      const records = run('kv-ledger', thinking, 3);
      expect(records.every((r) => r.outcome === 'success')).toBe(true);
      expect(records.some((r) => r.compactions > 0)).toBe(true);
      const { turns } = checkRecords(records, thinking === 'on');
      // Every turn is recorded, parsed, with its call's token span inside the turn.
      for (const r of records) {
        for (const t of r.turns!) {
          if (t.stage !== 'act') continue;
          expect(t.call?.parsed).toBe(true);
          expect(t.call!.span![0]).toBeGreaterThanOrEqual(t.start);
          expect(t.call!.span![1]).toBeLessThanOrEqual(t.end);
          expect(t.reasoningTokens > 0).toBe(thinking === 'on');
        }
      }
      expect(turns).toBe(records.reduce((n, r) => n + r.turns!.length, 0));
    }, 180_000);
  }

  it.skipIf(!sandboxAvailable('shell-ledger in the tools format'))(
    'shell-ledger, thinking on and off',
    () => {
      for (const thinking of ['on', 'off'] as const) {
        const records = run('shell-ledger', thinking, 2);
        expect(records.filter((r) => r.outcome === 'success').length).toBeGreaterThan(0);
        checkRecords(records, thinking === 'on');
      }
    },
    240_000,
  );
});
