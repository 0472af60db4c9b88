import { describe, expect, it } from 'vitest';
import { kvLedger } from './kv-ledger/index.ts';
import { markFacts, oracleSummary } from './summary-facts.ts';
import type { ChatMessage } from '../contracts/index.ts';
import { Rng } from '../util/random.ts';

describe('summary facts kept and dropped', () => {
  const content = { goal: ['queries a b'], facts: ['set a 5', 'set b 7', 'end'], meta: [] };

  it('marks a clause kept only when its words appear in order and adjacent', () => {
    const marks = markFacts({ content, summary: 'queries a b , set b 7 , set a 57 , a 5' });
    expect(marks).toEqual([
      { kind: 'goal', clause: 'queries a b', kept: true },
      { kind: 'fact', clause: 'set a 5', kept: false },
      { kind: 'fact', clause: 'set b 7', kept: true },
      { kind: 'fact', clause: 'end', kept: false },
    ]);
    expect(markFacts({ content, summary: oracleSummary(content) }).every((m) => m.kept)).toBe(true);
  });

  it('kv-ledger exposes the clauses its oracle keeps at a compaction point', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'you are an agent' },
      { role: 'user', content: 'read all , then answer . queries a' },
      { role: 'assistant', content: 'read' },
      { role: 'observation', content: 'chunk 0 : set a 5 , set b 2 , filler 3' },
      { role: 'user', content: 'summarize the task goal and the facts needed so far' },
    ];
    const facts = kvLedger.summaryFacts!(messages);
    expect(facts).toEqual({ goal: ['queries a'], facts: ['set a 5'], meta: [] });
    expect(oracleSummary(facts)).toBe(kvLedger.summaryWriters.oracle(messages, new Rng(0)));
  });
});
