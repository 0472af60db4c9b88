import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { DenseChat } from './dense-chat.ts';
import type { TextPolicy } from '../contracts/index.ts';

// An expert that says what it sees: the number of turns and whether the last user turn is q_sum.
const echo: TextPolicy = (messages) => `${messages.length} ${messages[messages.length - 1]!.role}`;

describe('DenseChat', () => {
  it('lays parts and the expert chat side by side; a rebuild starts a new window from its head', () => {
    const chat = new DenseChat(echo, new Rng(0), 'task');
    expect(chat.reply()).toBe('1 user');
    chat.observe('obs one');
    chat.act('wrong', false);
    chat.observe('obs two');
    expect(chat.summary()).toBe('6 user'); // the window's five turns and q_sum
    chat.rebuild('head', [['wrong', 'obs two']]);
    expect(chat.reply()).toBe('3 observation'); // head + the one tail step only
    expect(chat.parts).toEqual([
      { kind: 'instruction', text: 'task' },
      { kind: 'reply', text: '1 user' },
      { kind: 'observation', text: 'obs one' },
      { kind: 'action', text: 'wrong' },
      { kind: 'observation', text: 'obs two' },
      { kind: 'summary', text: '6 user' },
      { kind: 'instruction', text: 'head' },
      { kind: 'action', text: 'wrong' },
      { kind: 'observation', text: 'obs two' },
      { kind: 'reply', text: '3 observation' },
    ]);
  });

  it('appends to the parts of earlier episodes of the same sequence', () => {
    const parts = [{ kind: 'context' as const, text: 'before' }];
    const chat = new DenseChat(echo, new Rng(0), 'task', parts);
    chat.reply();
    expect(parts.map((p) => p.kind)).toEqual(['context', 'instruction', 'reply']);
  });
});
