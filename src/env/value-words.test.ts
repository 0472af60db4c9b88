import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { LETTERS, NUMBERS, WORDS } from '../words/vocab.ts';
import { isValueWord, VALUE_WORDS, valueText } from './value-words.ts';

describe('value words', () => {
  it('are 64 distinct words, none a letter, number or word of the built-in vocabulary', () => {
    expect(VALUE_WORDS).toHaveLength(64);
    expect(new Set(VALUE_WORDS).size).toBe(64);
    const builtIn = new Set<string>([...LETTERS, ...NUMBERS, ...WORDS]);
    for (const w of VALUE_WORDS) expect(builtIn.has(w), w).toBe(false);
  });

  it('are each one Qwen3 token after a space, the way a task writes them', () => {
    const qwen3 = loadTokenizer('qwen3').tokenizer;
    for (const w of VALUE_WORDS) expect(qwen3.encode(` ${w}`), w).toHaveLength(1);
    // The numbers they replace are one to two digit tokens after a lone space token.
    expect(qwen3.encode(' 34')).toHaveLength(3);
  });

  it('spell a value one way or the other', () => {
    expect(valueText(34, false)).toBe('34');
    expect(valueText(0, true)).toBe(VALUE_WORDS[0]);
    expect(isValueWord(VALUE_WORDS[63])).toBe(true);
    expect(isValueWord('34')).toBe(false);
    expect(isValueWord(undefined)).toBe(false);
  });
});
