import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenizer, WORD_CHAT_TEMPLATE } from './load-tokenizer.ts';
import { WordTokenizer } from './tokenizer.ts';
import { VOCAB } from '../../words/vocab.ts';
import { wordTokenizerConfigJson, wordTokenizerJson } from './word-tokenizer-files.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-word-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the word vocabulary as Hugging Face tokenizer files', () => {
  it('loads through the Hugging Face tokenizer library and encodes as WordTokenizer does, newlines included', () => {
    writeFileSync(join(root, 'tokenizer.json'), JSON.stringify(wordTokenizerJson(VOCAB)));
    writeFileSync(join(root, 'tokenizer_config.json'), JSON.stringify(wordTokenizerConfigJson(VOCAB)));
    const hf = loadTokenizer(root);
    const words = new WordTokenizer();
    const text =
      '<bos> <sys> you are an agent <eot>\n<user> summarize the task goal : 12 , 63 <eot> <asst> ( a ) [ z ] ? = - .';
    expect(hf.tokenizer.encode(text)).toEqual(words.encode(text));
    expect(hf.tokenizer.vocabSize).toBe(VOCAB.length);
    expect(hf.tokenizer.encode('<eot>')).toEqual([words.specialId('<eot>')]);
    expect(hf.chatTemplate).toBe(WORD_CHAT_TEMPLATE);
  });
});
