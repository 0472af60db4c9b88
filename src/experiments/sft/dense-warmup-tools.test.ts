import { describe, expect, it } from 'vitest';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { encodeDense } from './dense-encoding.ts';

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
});
