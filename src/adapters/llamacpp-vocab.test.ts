import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../model/network/config.ts';
import { exportGguf, namedWeights } from '../model/formats/gguf-export.ts';
import { wordVocabMetadata } from '../model/formats/gguf-vocab.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { TEST_OPTIM } from '../model/network/test-helpers.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { VOCAB } from '../words/vocab.ts';
import { Rng } from '../util/random.ts';
import { asToken, asTokens, loadGgufModel } from './llamacpp.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-llamacpp-vocab-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the word vocabulary inside a GGUF file, as llama.cpp reads it', () => {
  it('tokenizes text in the vocabulary to the ids WordTokenizer gives, and detokenizes them to the words', async () => {
    const cfg = modelConfig('tiny', { vocabSize: VOCAB.length + 3 });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const net = policy.net;
    const weights = namedWeights(net);
    const path = join(root, 'word.gguf');
    writeFileSync(
      path,
      exportGguf({
        cfg,
        weights,
        vocab: wordVocabMetadata({ words: VOCAB, vocabSize: cfg.vocabSize }),
        precision: 'f32',
        name: 'w',
      }),
    );
    const model = await loadGgufModel(path);
    const words = new WordTokenizer();
    // What the chat template renders for a system turn, a task and an action (method §2).
    const text =
      '<bos> <sys> you are an agent <eot> <user> summarize the task goal and the facts needed so far <eot> <asst> continue from the summary : 12 , 63 ( a ) [ z ] ? = - . <eot>';
    expect(model.tokenize(text, true)).toEqual(words.encode(text));
    expect(model.detokenize(asTokens(words.encode('you are an agent : 12')))).toBe(' you are an agent : 12');
    // A word outside the vocabulary becomes the unknown id instead of crashing llama.cpp.
    expect(model.tokenize('agent zebra agent', false)).toEqual([
      ...words.encode('agent'),
      words.specialId('<pad>'),
      ...words.encode('agent'),
    ]);
    expect(model.isSpecialToken(asToken(words.specialId('<eot>')))).toBe(true);
    expect(model.isEogToken(asToken(words.specialId('<eot>')))).toBe(true);
    await model.dispose();
  });
});
