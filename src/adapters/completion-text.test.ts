import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { applyStopStrings, Detokenizer } from './completion-text.ts';

describe('completion text', () => {
  const tokenizer = new WordTokenizer();
  const detok = new Detokenizer(tokenizer);

  it('pieces concatenate to the decoded text, with spacing that depends on the previous token', () => {
    const prompt = tokenizer.encode('<bos> <user> read all');
    const gen = tokenizer.encode('set a 1 \n read a');
    const pieces = detok.pieces(prompt, gen);
    expect(pieces.join('')).toBe(tokenizer.decode([...prompt, ...gen]).slice(tokenizer.decode(prompt).length));
    expect(pieces[0]).toBe(' set');
    expect(pieces[3]).toBe('\n');
    expect(pieces[4]).toBe('read'); // no space after a newline
    expect(detok.pieces([], prompt).join('')).toBe(tokenizer.decode(prompt));
  });

  it('cuts at the earliest stop string, keeping the token that completes it', () => {
    const pieces = [' set', ' a', ' 1', '\n', 'get', ' a'];
    expect(applyStopStrings({ pieces, stops: ['get', ' a'], includeStop: false })).toEqual({
      keep: 2,
      text: ' set',
      stop: ' a',
    });
    expect(applyStopStrings({ pieces, stops: ['1\ng'], includeStop: true })).toEqual({
      keep: 5,
      text: ' set a 1\ng',
      stop: '1\ng',
    });
    expect(applyStopStrings({ pieces, stops: ['zzz', ''], includeStop: false })).toBeNull();
  });
});
