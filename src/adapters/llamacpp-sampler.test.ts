import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../model/network/config.ts';
import { exportGguf, namedWeights } from '../model/formats/gguf-export.ts';
import { wordVocabMetadata } from '../model/formats/gguf-vocab.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { ModelSampler } from '../model/sampler/sampler.ts';
import { scrambleWeights, TEST_OPTIM } from '../model/network/test-helpers.ts';
import { VOCAB } from '../words/vocab.ts';
import type { SampleRequest } from '../contracts/index.ts';
import { Rng } from '../util/random.ts';
import { createContext, LlamaCppError } from './llamacpp.ts';
import { LlamaCppPolicy, LlamaCppSampler, llamaCppPolicyPath } from './llamacpp-sampler.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-llamacpp-sampler-'));
const path = join(root, 'policy.gguf');
const cfg = modelConfig('tiny', { vocabSize: VOCAB.length, dModel: 32, nHeads: 2, mlpHidden: 64, maxSeqLen: 96 });
const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
scrambleWeights(policy.net, 2);
const samplers: LlamaCppSampler[] = [];

beforeAll(() => {
  const net = policy.net;
  const weights = namedWeights(net);
  const vocab = wordVocabMetadata({ words: VOCAB, vocabSize: cfg.vocabSize });
  writeFileSync(path, exportGguf({ cfg, weights, vocab, precision: 'f32', name: 'sampler-test' }));
});
afterAll(async () => {
  for (const s of samplers) await s.dispose();
  rmSync(root, { recursive: true, force: true });
});

async function open(seed: number, file = path, contextSize = cfg.maxSeqLen): Promise<LlamaCppSampler> {
  const s = await LlamaCppSampler.open({ path: file, rng: new Rng(seed), contextSize });
  samplers.push(s);
  return s;
}

function requests(n: number, seed: number): SampleRequest[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, (_, i) => ({
    prompt: Array.from({ length: 3 + (i % 7) }, () => rng.int(cfg.vocabSize)),
    maxTokens: 12 + (i % 5),
    stopTokens: [6],
  }));
}

/** The embedded model's log-prob of every generated token, by a full forward over prompt + output. */
function embedded(req: SampleRequest, tokens: number[]): { logprobs: number[]; entropies: number[] } {
  const seq = Int32Array.from([...req.prompt, ...tokens]);
  const f = policy.forward([seq]);
  const at = (a: Float32Array) => tokens.map((_, j) => a[req.prompt.length + j]!);
  return { logprobs: at(f.logprobs[0]!), entropies: at(f.entropies[0]!) };
}

describe('LlamaCppSampler', () => {
  it('parses the llamacpp:FILE form', () => {
    expect(llamaCppPolicyPath('llamacpp:/x/y.gguf')).toBe('/x/y.gguf');
    expect(llamaCppPolicyPath('runs/base')).toBeNull();
  });

  it('samples a batch as parallel sequences; its log-probs and entropies are the embedded model’s', async () => {
    const sampler = await open(5);
    const reqs = requests(10, 3);
    const out = await sampler.sample(reqs, { temperature: 1, topP: 1 });
    let max = 0;
    out.forEach((r, i) => {
      const req = reqs[i]!;
      expect(r.tokens.length).toBeGreaterThan(0);
      expect(r.tokens.length).toBeLessThanOrEqual(req.maxTokens);
      expect(r.logprobs).toHaveLength(r.tokens.length);
      if (r.finishReason === 'stop') expect(r.tokens.at(-1)).toBe(6);
      else expect(r.tokens).toHaveLength(req.maxTokens);
      expect(r.tokens.slice(0, -1)).not.toContain(6);
      const ours = embedded(req, r.tokens);
      r.logprobs.forEach((lp, j) => (max = Math.max(max, Math.abs(lp! - ours.logprobs[j]!))));
      r.entropies!.forEach((e, j) => expect(e).toBeCloseTo(ours.entropies[j]!, 3));
    });
    console.log(`llama.cpp sampler vs embedded forward: max |Δ log-prob| = ${max.toExponential(2)}`);
    expect(max).toBeLessThan(1e-3);
  });

  it("reads each sequence's own distribution when prompts of different lengths share a batch", async () => {
    // A wide vocabulary makes llama.cpp's lazy reordering of a batch's outputs slow enough that
    // node-llama-cpp's concurrent reads would see it half done if a batch's outputs were out of order.
    const wideCfg = { ...cfg, vocabSize: 65536 };
    const wide = new PolicyModel({ config: wideCfg, optim: TEST_OPTIM, rng: new Rng(2) });
    scrambleWeights(wide.net, 2);
    const file = join(root, 'wide-vocab.gguf');
    const vocab = wordVocabMetadata({ words: VOCAB, vocabSize: wideCfg.vocabSize });
    writeFileSync(
      file,
      exportGguf({ cfg: wideCfg, weights: namedWeights(wide.net), vocab, precision: 'f32', name: 'w' }),
    );
    let wrong = 0;
    // Fresh contexts: a whole prompt per sequence in the first batch. Before next() issued in id
    // order, runs of this test counted 20 to 44 wrong log-probs.
    for (let round = 0; round < 8; round++) {
      const sampler = await open(round, file, 32);
      const rng = new Rng(100 + round);
      const reqs = Array.from({ length: 16 }, (_, i) => ({
        prompt: Array.from({ length: 2 + ((i * 7 + round) % 13) }, () => rng.int(wideCfg.vocabSize)),
        maxTokens: 1 + (i % 3),
        stopTokens: [6],
      }));
      const out = await sampler.sample(reqs, { temperature: 1, topP: 1 });
      out.forEach((r, i) => {
        const at = reqs[i]!.prompt.length;
        const lp = wide.forward([Int32Array.from([...reqs[i]!.prompt, ...r.tokens])]).logprobs[0]!;
        r.logprobs.forEach((x, j) => (wrong += Math.abs(x! - lp[at + j]!) > 1e-3 ? 1 : 0));
      });
      await sampler.dispose(); // each context holds a logits buffer of batch x 65,536 floats
    }
    expect(wrong).toBe(0);
  });

  it('reproduces its draws from the seed and matches the embedded sampler at temperature 0', async () => {
    const reqs = requests(6, 4);
    const a = await (await open(9)).sample(reqs, { temperature: 0.8, topP: 0.9 });
    const b = await (await open(9)).sample(reqs, { temperature: 0.8, topP: 0.9 });
    expect(b.map((r) => r.tokens)).toEqual(a.map((r) => r.tokens));
    const greedy = await (await open(1)).sample(reqs, { temperature: 0, topP: 1 });
    const embedded = new ModelSampler({ policy, rng: new Rng(1) }).sampleSync(reqs, { temperature: 0, topP: 1 });
    expect(greedy.map((r) => r.tokens)).toEqual(embedded.map((r) => r.tokens));
  });

  it('continues a conversation from its cached prefix with the same results as a fresh context', async () => {
    const warm = await open(7);
    const reqs = requests(4, 5);
    const first = await warm.sample(reqs, { temperature: 1, topP: 1 });
    // Turn two: each prompt extends its first prompt and output (the multi-turn pattern of an episode).
    const turn2 = reqs.map((r, i) => ({ ...r, prompt: [...r.prompt, ...first[i]!.tokens, 11, 12] }));
    const cached = await warm.sample(turn2, { temperature: 0, topP: 1 });
    const fresh = await (await open(7)).sample(turn2, { temperature: 0, topP: 1 });
    expect(cached.map((r) => r.tokens)).toEqual(fresh.map((r) => r.tokens));
    cached.forEach((r, i) => r.logprobs.forEach((lp, j) => expect(lp).toBeCloseTo(fresh[i]!.logprobs[j]!, 4)));
  });

  it("sizes its context by the rollout's window, not the model's context length, and refuses a window past it", async () => {
    // The same weights in a file whose metadata claims 2^24 positions (a KV cache of gigabytes).
    const long = join(root, 'long-context.gguf');
    const vocab = wordVocabMetadata({ words: VOCAB, vocabSize: cfg.vocabSize });
    const longCfg = { ...cfg, maxSeqLen: 1 << 24 };
    writeFileSync(
      long,
      exportGguf({ cfg: longCfg, weights: namedWeights(policy.net), vocab, precision: 'f32', name: 'x' }),
    );
    expect((await LlamaCppPolicy.load(long)).contextSize).toBe(1 << 24);
    const sampler = await open(3, long, 48);
    expect(sampler.contextSize).toBe(48);
    const reqs = requests(3, 8).map((r) => ({ ...r, maxTokens: 8 }));
    const out = await sampler.sample(reqs, { temperature: 0, topP: 1 });
    const fresh = await (await open(3)).sample(reqs, { temperature: 0, topP: 1 });
    expect(out.map((r) => r.tokens)).toEqual(fresh.map((r) => r.tokens));
    await expect(
      sampler.sample([{ prompt: [1, 2], maxTokens: 47, stopTokens: [] }], { temperature: 1, topP: 1 }),
    ).rejects.toThrow(/49 tokens exceeds the sampler's context window of 48 tokens; shorten it or raise --context/);
    await expect(open(1, path, cfg.maxSeqLen + 1)).rejects.toThrow(
      new RegExp(`window of ${cfg.maxSeqLen + 1} tokens exceeds the model's context length ${cfg.maxSeqLen}`),
    );
  });

  it('refuses a context larger than the machine, naming the sizes, before llama.cpp allocates it', async () => {
    const { model } = await LlamaCppPolicy.load(path);
    const err = await createContext({ model, contextSize: 1 << 24, sequences: 4096 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlamaCppError);
    expect((err as Error).message).toMatch(
      /a llama\.cpp context of 4096 x 16777216 tokens needs about [\d.]+ GB .* more than this machine's [\d.]+ GB of memory; use a smaller context window \(--context\)/,
    );
  });

  it('refuses a request longer than the model context', async () => {
    const sampler = await open(1);
    await expect(
      sampler.sample([{ prompt: [1, 2], maxTokens: cfg.maxSeqLen, stopTokens: [] }], { temperature: 1, topP: 1 }),
    ).rejects.toThrow(/exceeds the sampler's context window/);
  });
});
