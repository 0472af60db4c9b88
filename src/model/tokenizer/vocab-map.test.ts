import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OPTIMIZER } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { loadCheckpoint, saveCheckpoint } from '../formats/checkpoint.ts';
import { readCheckpointTokenizer } from '../formats/checkpoint-tokenizer.ts';
import { modelConfig } from '../network/config.ts';
import { CriticModel } from '../network/critic.ts';
import { loadTokenizer } from './load-tokenizer.ts';
import { PolicyModel } from '../network/policy.ts';
import { ModelSampler } from '../sampler/sampler.ts';
import { checkTokenizer, TokenizerMismatchError } from './tokenizer-match.ts';
import { UNKNOWN_LOGIT, VocabMap } from './vocab-map.ts';

const QWEN = { name: 'qwen3', sha256: loadTokenizer('qwen3').sha256 };
// Real Qwen3 ids far apart (im_start, im_end, digits, words): the network sees 7 + 1 indices.
const IDS = [151644, 151645, 198, 15, 16, 17, 878];

function trimmedPolicy(seed: number): PolicyModel {
  const vocab = VocabMap.trimmed(IDS, QWEN);
  const config = modelConfig('tiny', { vocabSize: vocab.size, maxSeqLen: 32 });
  return new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(seed), vocab });
}

describe('VocabMap', () => {
  it('maps real ids to indices and back; ids outside the set go to the one unknown slot', () => {
    const m = VocabMap.trimmed([878, 15, 151645, 15], QWEN);
    expect(m.ids).toEqual([15, 878, 151645]);
    expect(m.size).toBe(4);
    expect(m.unknown).toBe(3);
    expect(Array.from(m.toInternal([151645, 15, 999, 200000]))).toEqual([2, 0, 3, 3]);
    expect(m.toReal(1)).toBe(878);
    expect(() => m.toReal(3)).toThrow(/unknown slot/);
    expect(m.covers(878)).toBe(true);
    expect(m.covers(879)).toBe(false);
    const id = VocabMap.identity(10);
    const arr = Int32Array.from([1, 2]);
    expect(id.toInternal(arr)).toBe(arr); // no copy on the word path
    expect(id.unknown).toBeNull();
  });
});

describe('the embedded model on a trimmed vocabulary', () => {
  it('samples only real ids of the set, never the unknown slot, with the trainer log-probs', () => {
    const policy = trimmedPolicy(1);
    const sampler = new ModelSampler({ policy, rng: new Rng(2) });
    // An input id outside the set (42) reads as unknown; prompts and stops are real ids.
    const prompt = [151644, 878, 42, 198];
    const [res] = sampler.sampleSync([{ prompt, maxTokens: 20, stopTokens: [151645] }], { temperature: 1, topP: 1 });
    expect(res!.tokens.length).toBeGreaterThan(0);
    expect(res!.tokens.every((t) => IDS.includes(t))).toBe(true);
    // The trainer's forward over the same real ids gives the sampler's log-probs.
    const seq = Int32Array.from([...prompt, ...res!.tokens]);
    const lp = policy.forward([seq]).logprobs[0]!;
    res!.logprobs.forEach((x, i) => expect(lp[prompt.length + i]).toBeCloseTo(x!, 5));
    // The unknown slot has no probability mass, so its logit cannot be sampled at any temperature.
    const many = sampler.sampleSync(
      Array.from({ length: 16 }, () => ({ prompt: [42, 42], maxTokens: 8, stopTokens: [] })),
      { temperature: 5, topP: 1 },
    );
    expect(many.flatMap((r) => r.tokens).every((t) => IDS.includes(t))).toBe(true);
  });

  it('gives the unknown row of lm_head no gradient and keeps log-probs finite', () => {
    const policy = trimmedPolicy(3);
    const seq = Int32Array.from([151644, 878, 42, 198, 15, 16]);
    const { logprobs } = policy.forward([seq], { train: true });
    expect(Array.from(logprobs[0]!).every(Number.isFinite)).toBe(true);
    policy.backward({ logprobs: [new Float32Array(seq.length).fill(-1)] });
    const spec = policy.net.specs.find((s) => s.name === 'lm_head.weight')!;
    const d = policy.config.dModel;
    const unk = policy.vocab.unknown!;
    const g = policy.net.grads.subarray(spec.offset + unk * d, spec.offset + (unk + 1) * d);
    expect(Array.from(g).every((x) => x === 0)).toBe(true);
    expect(UNKNOWN_LOGIT).toBeLessThan(-1e20);
  });

  it('saves the map and the tokenizer with the checkpoint, and refuses another tokenizer naming both', async () => {
    const policy = trimmedPolicy(4);
    const critic = CriticModel.fromPolicy({ policy, optim: DEFAULT_OPTIMIZER });
    const dir = mkdtempSync(join(tmpdir(), 'crl-vocab-'));
    await saveCheckpoint(dir, { policy, critic });
    const file = JSON.parse(readFileSync(join(dir, 'crl_tokenizer.json'), 'utf8')) as Record<string, unknown>;
    expect(file).toMatchObject({
      name: 'qwen3',
      sha256: QWEN.sha256,
      vocabulary: { ids: [...IDS].sort((a, b) => a - b) },
    });
    const loaded = await loadCheckpoint(dir);
    expect(loaded.policy.vocab.ids).toEqual(policy.vocab.ids);
    expect(loaded.critic!.vocab.ids).toEqual(policy.vocab.ids);
    const seq = [Int32Array.from([151644, 878, 42, 198])];
    expect(Array.from(loaded.policy.forward(seq).logprobs[0]!)).toEqual(Array.from(policy.forward(seq).logprobs[0]!));
    expect(await readCheckpointTokenizer(dir)).toEqual(QWEN);
    const word = loadTokenizer('word');
    const check = () =>
      checkTokenizer({ what: `checkpoint ${dir}`, ref: loaded.policy.vocab.tokenizer, tokenizer: word });
    expect(check).toThrow(TokenizerMismatchError);
    expect(check).toThrow(/trained with tokenizer qwen3, not word/);
    expect(() =>
      checkTokenizer({ what: 'x', ref: loaded.policy.vocab.tokenizer, tokenizer: loadTokenizer('qwen3') }),
    ).not.toThrow();
  });

  it('a word checkpoint keeps the identity map; one written before tokenizers were recorded reads as word', async () => {
    const config = modelConfig('tiny', { vocabSize: 204, maxSeqLen: 32 });
    const policy = new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(5) });
    const dir = mkdtempSync(join(tmpdir(), 'crl-vocab-'));
    await saveCheckpoint(dir, { policy });
    expect(JSON.parse(readFileSync(join(dir, 'crl_tokenizer.json'), 'utf8'))).toMatchObject({
      name: 'word',
      vocabulary: 'full',
    });
    const { rmSync } = await import('node:fs');
    rmSync(join(dir, 'crl_tokenizer.json'));
    const old = await loadCheckpoint(dir);
    expect(old.policy.vocab.isIdentity).toBe(true);
    expect(old.policy.vocab.tokenizer.name).toBe('word');
  });
});
