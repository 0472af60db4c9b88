import { describe, expect, it } from 'vitest';
import { kvLedgerReasoner } from './reasoner.ts';

describe('the kv-ledger expert’s reasoning (tools format, thinking on)', () => {
  const messages = [
    { role: 'user' as const, content: 'read all , then answer . queries g' },
    { role: 'assistant' as const, content: 'read' },
    { role: 'observation' as const, content: 'chunk 1 : set g 4 , filler 3 , set b 2' },
    { role: 'assistant' as const, content: 'read' },
    { role: 'observation' as const, content: 'chunk 2 : del g , set g 9' },
  ];
  it('while reading, says how far the stream is', () => {
    expect(kvLedgerReasoner({ stage: 'act', text: 'read', messages })).toBe(
      'Chunk 2 is the last one I read and the stream has not ended, so I read the next one.',
    );
  });
  it('before answering, lists every update of each queried key in view and picks the latest', () => {
    const ended = [
      ...messages,
      { role: 'assistant' as const, content: 'read' },
      { role: 'observation' as const, content: 'end' },
    ];
    expect(kvLedgerReasoner({ stage: 'act', text: 'answer 9', messages: ended })).toBe(
      'Every chunk is read. The queries are g.\ng was 4, then deleted, then 9; the latest is 9.',
    );
  });
});
