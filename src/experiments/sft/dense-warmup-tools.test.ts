import { describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { encodeDense } from './dense-encoding.ts';
import { Rng } from '../../util/random.ts';
import {
  pythonJinjaAvailable,
  qwen3Messages,
  renderWithPython,
} from '../../rollout/agent-format/testing/qwen3-messages.ts';

const tokenizer = loadTokenizer('qwen3');
const family = getFamily('kv-ledger');
const layoutOf = (agentFormat: 'text' | 'tools') =>
  resolveRolloutConfig({
    input: overFamilySizes(family.rollout, { agentFormat, thinking: agentFormat === 'tools' }),
    tokenizer,
    tools: family.tools ?? null,
  }).layout;

describe('the dense warm-up in the tools format', () => {
  const tools = layoutOf('tools');
  const text = layoutOf('text');
  const starts = (xs: Int32Array, head: readonly number[]) => head.every((x, i) => xs[i] === x);

  it('opens a lookup form with the system turn the text format has, without the tool schemas', () => {
    const parts = [
      { kind: 'context', text: 'set e 14 , query e answer' },
      { kind: 'target', text: '14' },
    ] as const;
    const e = encodeDense(parts, tools, 10_000);
    expect(tools.systemTurn.length).toBeGreaterThan(tools.bareSystemTurn.length + 100);
    expect(tools.bareSystemTurn).toEqual(text.systemTurn);
    expect(starts(e.tokens, tools.bareSystemTurn)).toBe(true);
    expect(Array.from(e.tokens)).toEqual(Array.from(encodeDense(parts, text, 10_000).tokens));
  });

  it('opens an episode form (an instruction first) with the tools declared, as every episode does', () => {
    const parts = [
      { kind: 'instruction', text: 'read all , then answer . queries e' },
      { kind: 'reply', text: 'read' },
    ] as const;
    const e = encodeDense(parts, tools, 10_000);
    expect(starts(e.tokens, tools.systemTurn)).toBe(true);
    expect(tokenizer.tokenizer.decode(Array.from(e.tokens))).toContain('<tools>');
  });

  // A dense summary teaches the lookup a real summary makes, so it must be supervised after the
  // context a real summary is sampled after. The forms laid out each `read` with its reasoning,
  // which the template drops once the summary request follows: after the warm-up, summaries of real
  // windows were exact in 2% of held-out episodes (teacher-forced), against the forms' 0.997.
  it.skipIf(!pythonJinjaAvailable())(
    "lays an episode form's summary out after what the template renders before the summary request, with the family's reasoning",
    () => {
      const knobs = family.knobs.parse({ queries: 1, chunks: 12, valueWords: true });
      let forms = 0;
      for (let seed = 0; seed < 12; seed++) {
        const parts = family.sft!.dense!({ rng: new Rng(seed), knobs, maxChunks: 8, probes: 8, summaryShare: 1 });
        const e = encodeDense(parts, tools, 10_000, family.reasoner);
        const start = e.answerAt[0]!;
        const prefix = tokenizer.tokenizer.decode(Array.from(e.tokens.subarray(0, start)));
        const { messages, tools: declared } = qwen3Messages(prefix);
        expect(declared).not.toBeNull();
        const rendered = renderWithPython({
          template: tokenizer.chatTemplate,
          messages,
          tools: declared,
          enableThinking: true,
        });
        expect(prefix, `seed ${seed}`).toBe(rendered);
        expect(messages.filter((m) => m.role === 'assistant').length).toBeGreaterThan(0);
        const summary = tokenizer.tokenizer.decode(Array.from(e.tokens.subarray(start)));
        const reasoning = family.reasoner!({ stage: 'summarize', text: '', messages: [] });
        expect(summary.startsWith(`<think>\n${reasoning}\n</think>\n\n`), summary).toBe(true);
        forms++;
      }
      expect(forms).toBe(12);
    },
    60_000,
  );

  // An answer form teaches the answer's lookup where a real answer makes it: after every earlier
  // call with its reasoning (no user query after them, so the template keeps it).
  it.skipIf(!pythonJinjaAvailable())(
    "lays an answer form's reply out after what the template renders for the chat, with the expert's reasoning",
    () => {
      const knobs = family.knobs.parse({ queries: 1, chunks: 12, valueWords: true });
      for (let seed = 0; seed < 8; seed++) {
        const parts = family.sft!.dense!({
          rng: new Rng(seed),
          knobs,
          maxChunks: 8,
          probes: 8,
          summaryShare: 1,
          answerShare: 1,
        });
        const e = encodeDense(parts, tools, 10_000, family.reasoner);
        const start = e.answerAt[0]!;
        const prefix = tokenizer.tokenizer.decode(Array.from(e.tokens.subarray(0, start)));
        const { messages, tools: declared } = qwen3Messages(prefix);
        const rendered = renderWithPython({
          template: tokenizer.chatTemplate,
          messages,
          tools: declared,
          enableThinking: true,
        });
        expect(prefix, `seed ${seed}`).toBe(rendered);
        expect(messages.filter((m) => m.role === 'assistant' && m.reasoning_content).length).toBeGreaterThan(0);
        const reply = tokenizer.tokenizer.decode(Array.from(e.tokens.subarray(start)));
        const value = / (\w+)$/.exec(parts[parts.length - 1]!.text)![1]!;
        expect(reply).toMatch(/^<think>\nEvery chunk is read\. The queries are \w+(, \w+)*\.\n/);
        expect(reply).toContain(`the latest is ${value}.\n</think>\n\n<tool_call>`);
        expect(reply).toContain(`"${value}"]}}\n</tool_call><|im_end|>`);
      }
    },
    60_000,
  );
});
