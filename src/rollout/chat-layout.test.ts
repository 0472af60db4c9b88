import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { createChatLayout, DEFAULT_CHAT_TEMPLATES, encodeObservationTurn, encodeResumeTurn } from './chat-layout.ts';
import { parseChat } from './parse-chat.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const layout = createChatLayout({ tokenizer: source, templates: DEFAULT_CHAT_TEMPLATES });
const id = (w: string) => tokenizer.specialId(w);

describe('chat layout', () => {
  it('lays out the system turn and q_sum with their markers', () => {
    expect(tokenizer.decode(layout.systemTurn)).toBe('<bos> <sys> you are an agent <eot>');
    expect(tokenizer.decode(layout.summaryPrompt)).toBe(
      `<user> ${DEFAULT_CHAT_TEMPLATES.summaryInstruction} <eot> <asst>`,
    );
  });

  it('cuts long observations to the cap, ending with <cut>, and leaves short ones alone', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 2, max: 32 }), (n, cap) => {
        const text = Array(n).fill('filler').join(' ');
        const o = encodeObservationTurn({ layout, observation: text, maxTokens: cap });
        expect(o.originalTokens).toBe(n);
        expect(o.cut).toBe(n > cap);
        // The content and the turn end; `<obs>` came with the action seam (afterAction).
        expect(o.tokens.length).toBe(Math.min(n, cap) + 1);
        expect(o.tokens[o.tokens.length - 1]).toBe(id('<eot>'));
        if (o.cut) expect(o.tokens[o.tokens.length - 2]).toBe(id('<cut>'));
      }),
    );
  });

  it('puts the summary in u_resume without doubling its <eot>', () => {
    const s = tokenizer.encode('goal 3 , chunk 1 total 4 <eot>');
    expect(tokenizer.decode(encodeResumeTurn(layout, s))).toBe(
      '<user> continue from the summary : goal 3 , chunk 1 total 4 <eot>',
    );
    expect(encodeResumeTurn(layout, s.slice(0, -1))).toEqual(encodeResumeTurn(layout, s));
  });
});

describe('parseChat', () => {
  it('parses a window into turns and drops the empty open assistant turn', () => {
    const tokens = tokenizer.encode(
      '<bos> <sys> you are an agent <eot> <user> read chunk 0 <eot> <asst> read chunk 0 <eot> <obs> chunk 0 value 3 <eot> <asst>',
    );
    expect(parseChat(tokens, layout)).toEqual([
      { role: 'system', content: 'you are an agent' },
      { role: 'user', content: 'read chunk 0' },
      { role: 'assistant', content: 'read chunk 0' },
      { role: 'observation', content: 'chunk 0 value 3' },
    ]);
  });

  it('keeps a partial open turn and closes a turn cut by a new marker', () => {
    const tokens = tokenizer.encode('<user> a b <asst> go north');
    expect(parseChat(tokens, layout)).toEqual([
      { role: 'user', content: 'a b' },
      { role: 'assistant', content: 'go north' },
    ]);
  });

  it('keeps empty closed turns (an empty summary is still a turn)', () => {
    expect(parseChat(tokenizer.encode('<asst> <eot>'), layout)).toEqual([{ role: 'assistant', content: '' }]);
  });
});
