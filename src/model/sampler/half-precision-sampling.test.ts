/**
 * The sampler with half-precision weights (network/weight-precision.ts) against the same model in f32,
 * on a small Qwen3-like model (grouped-query attention, q/k norm, tied embeddings) with O(1)
 * weights, so logits are far from uniform: logits within a stated bound of the f32 ones, greedy
 * tokens equal, the half copy remade when the weights change and the f32 master weights left as
 * they were. CI runs the file with the native kernels and with CRL_NATIVE=0.
 */
import { describe, expect, it } from 'vitest';
import { nativeStatus } from '../../tensor/native.ts';
import { Rng } from '../../util/random.ts';
import { modelConfig } from '../network/config.ts';
import { KvDecoder } from './kv-decoder.ts';
import { PolicyModel } from '../network/policy.ts';
import { ModelSampler } from './sampler.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../network/test-helpers.ts';
import {
  HALF_PRECISION_MIN_PARAMS,
  resolvePrecision,
  WeightPrecisionError,
  type WeightPrecision,
} from '../network/weight-precision.ts';

const cfg = modelConfig('reference', { nKvHeads: 2, qkNorm: true, tiedEmbeddings: true, maxSeqLen: 64 });

function policy(seed = 1): PolicyModel {
  const p = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(seed) });
  scrambleWeights(p.net, seed + 1);
  return p;
}

/** Logits of prompts [3, 9, 1 tokens] and then 6 teacher-forced steps, every row in order. */
function decodeLogits(p: PolicyModel, precision: WeightPrecision): Float32Array[] {
  const rng = new Rng(5);
  const prompts = randomSequences({ rng, lengths: [3, 9, 1], cfg });
  const dec = new KvDecoder(p.net, precision);
  const started = dec.start({ prompts, maxTotal: 16 });
  const out = [started.logits.slice(0, 3 * cfg.vocabSize)];
  for (let t = 0; t < 6; t++) {
    const tokens = Int32Array.from(randomSequences({ rng, lengths: [3], cfg })[0]!);
    out.push(dec.step({ slotIds: started.slots, tokens, count: 3 }).slice(0, 3 * cfg.vocabSize));
  }
  return out;
}

function maxAbs(rows: Float32Array[]): number {
  return Math.max(...rows.map((r) => r.reduce((m, x) => Math.max(m, Math.abs(x)), 0)));
}

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  a.forEach((r, i) => r.forEach((x, j) => (m = Math.max(m, Math.abs(x - b[i]![j]!)))));
  return m;
}

async function greedy(p: PolicyModel, precision: WeightPrecision): Promise<number[][]> {
  const sampler = new ModelSampler({ policy: p, rng: new Rng(0), precision });
  const prompts = randomSequences({ rng: new Rng(9), lengths: [2, 5, 1, 4], cfg });
  const res = await sampler.sample(
    prompts.map((prompt) => ({ prompt: Array.from(prompt), maxTokens: 24, stopTokens: [] })),
    { temperature: 0, topP: 1 },
  );
  return res.map((r) => r.tokens);
}

// Max |logit difference| / max |logit| over every row above. Measured on both backends: 6.7e-4
// (f16: 0.015 on logits up to 22.8) and 6.0e-3 (bf16: 0.136); each weight's relative rounding
// error is at most 2^-11 (f16) or 2^-8 (bf16), and the bounds leave 3x room over the measurements.
const BOUND: Record<'f16' | 'bf16', number> = { f16: 0.002, bf16: 0.02 };

describe(`sampling with half-precision weights (${nativeStatus().available ? 'native' : 'TypeScript'} kernels)`, () => {
  for (const precision of ['f16', 'bf16'] as const) {
    it(`${precision}: logits within ${BOUND[precision]} of the largest f32 logit; greedy tokens equal`, async () => {
      const p = policy();
      const exact = decodeLogits(p, 'f32');
      const half = decodeLogits(p, precision);
      const rel = maxDiff(half, exact) / maxAbs(exact);
      expect(rel).toBeLessThan(BOUND[precision]);
      expect(rel).toBeGreaterThan(0); // the half copy really was read
      expect(await greedy(p, precision)).toEqual(await greedy(p, 'f32'));
    });
  }

  it('remakes the half copy when the weights change, and never rounds the f32 master weights', () => {
    const p = policy();
    const before = Buffer.from(p.net.params.slice().buffer);
    const unchanged = () =>
      Buffer.from(p.net.params.buffer, p.net.params.byteOffset, p.net.params.byteLength).equals(before);
    const dec = new KvDecoder(p.net, 'bf16');
    const prompt = [Int32Array.from([1, 2, 3])];
    const first = dec.start({ prompts: prompt, maxTotal: 8 }).logits.slice(0, cfg.vocabSize);
    expect(unchanged()).toBe(true);
    scrambleWeights(p.net, 42); // new weights, as a training step or a weight update writes them
    p.net.markWeightsChanged();
    const second = dec.start({ prompts: prompt, maxTotal: 8 }).logits.slice(0, cfg.vocabSize);
    const fresh = new KvDecoder(p.net, 'bf16').start({ prompts: prompt, maxTotal: 8 }).logits.slice(0, cfg.vocabSize);
    expect(second).toEqual(fresh);
    expect(second).not.toEqual(first);
  });

  it('refuses f16 for weights beyond its range, naming the matrix and the way out', () => {
    const p = policy();
    p.net.w.layers[1]!.down[5] = 1e6;
    p.net.markWeightsChanged();
    const message = /layer 1 down_proj holds 1000000, beyond f16's largest value 65504: sample with bf16/;
    expect(() => new ModelSampler({ policy: p, rng: new Rng(0), precision: 'f16' })).toThrow(WeightPrecisionError);
    expect(() => new ModelSampler({ policy: p, rng: new Rng(0), precision: 'f16' })).toThrow(message);
    expect(new ModelSampler({ policy: p, rng: new Rng(0), precision: 'bf16' }).precision).toBe('bf16');
  });

  it("'auto' keeps f32 below the threshold (small models unchanged) and picks bf16 from it", () => {
    expect(new ModelSampler({ policy: policy(), rng: new Rng(0) }).precision).toBe('f32');
    expect(resolvePrecision('auto', HALF_PRECISION_MIN_PARAMS - 1)).toBe('f32');
    expect(resolvePrecision('auto', HALF_PRECISION_MIN_PARAMS)).toBe('bf16');
    expect(resolvePrecision('f16', HALF_PRECISION_MIN_PARAMS)).toBe('f16');
    expect(resolvePrecision('f32', 10 * HALF_PRECISION_MIN_PARAMS)).toBe('f32');
  });
});
