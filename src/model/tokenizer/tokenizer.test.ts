import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { UnknownWordError, WordTokenizer } from './tokenizer.ts';
import { VOCAB } from '../../words/vocab.ts';

describe('WordTokenizer', () => {
  const tok = new WordTokenizer();

  it('keeps the vocabulary under 256 tokens', () => {
    expect(tok.vocabSize).toBeLessThan(256);
  });

  it('encodes words and newlines, and decodes back', () => {
    const ids = tok.encode('read chunk 3\nset key 7');
    expect(ids).toHaveLength(7);
    expect(ids[3]).toBe(tok.specialId('\n'));
    expect(tok.decode(ids)).toBe('read chunk 3\nset key 7');
  });

  it('round-trips any sequence of vocabulary ids (decode then encode)', () => {
    const words = VOCAB.filter((w) => w !== '\n');
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...words), fc.constant('\n')), { maxLength: 40 }), (ws) => {
        const ids = ws.map((w) => tok.specialId(w));
        expect(tok.encode(tok.decode(ids))).toEqual(ids);
      }),
    );
  });

  it('names the unknown word', () => {
    expect(() => tok.encode('read zebra')).toThrow(UnknownWordError);
    expect(() => tok.encode('read zebra')).toThrow(/zebra/);
  });
});
