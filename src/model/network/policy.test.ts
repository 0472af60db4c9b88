import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { modelConfig, type ModelConfig } from './config.ts';
import { PolicyModel } from './policy.ts';
import { referenceHeads } from './reference-f64.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from './test-helpers.ts';

/** Grouped-query attention (4 query heads on 2 kv heads), Qwen3's q/k norm, head size 6 != dModel / nHeads. */
const GQA = { nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true };

function setup(tied: boolean, extra: Partial<ModelConfig> = {}) {
  const cfg = modelConfig('tiny', { tiedEmbeddings: tied, ...extra });
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  const seqs = randomSequences({ rng: new Rng(3), lengths: [6, 1, 9, 4], cfg });
  return { cfg, policy, seqs };
}

function refLoss(
  policy: PolicyModel,
  params64: Float64Array,
  seqs: Int32Array[],
  gl: Float32Array[],
  ge: Float32Array[],
): number {
  let loss = 0;
  seqs.forEach((s, i) => {
    const r = referenceHeads({ cfg: policy.config, specs: policy.net.specs, params: params64, tokens: s, head: 'lm' });
    for (let t = 0; t < s.length; t++) loss += gl[i]![t]! * r.logprobs[t]! + ge[i]![t]! * r.entropies[t]!;
  });
  return loss;
}

describe.each([
  ['tied embeddings: false', false, {}],
  ['tied embeddings: true', true, {}],
  ['GQA 4/2 heads, head size 6, q/k norm', false, GQA],
] as const)('PolicyModel (%s)', (_name, tied, extra) => {
  it('forward matches the float64 reference', () => {
    const { policy, seqs } = setup(tied, extra);
    const out = policy.forward(seqs);
    const p64 = Float64Array.from(policy.net.params);
    let maxDiff = 0;
    seqs.forEach((s, i) => {
      const r = referenceHeads({ cfg: policy.config, specs: policy.net.specs, params: p64, tokens: s, head: 'lm' });
      expect(out.logprobs[i]![0]).toBe(0);
      for (let t = 0; t < s.length; t++) {
        maxDiff = Math.max(
          maxDiff,
          Math.abs(out.logprobs[i]![t]! - r.logprobs[t]!),
          Math.abs(out.entropies[i]![t]! - r.entropies[t]!),
        );
      }
    });
    console.log(`policy forward vs f64 reference: max diff ${maxDiff.toExponential(2)}`);
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it('backward matches float64 finite differences of the whole model', () => {
    const { policy, seqs } = setup(tied, extra);
    const rng = new Rng(4);
    const gl = seqs.map((s) => Float32Array.from(s, () => rng.normal()));
    const ge = seqs.map((s) => Float32Array.from(s, () => rng.normal()));
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: gl, entropies: ge });
    const grads = policy.net.grads;
    const p64 = Float64Array.from(policy.net.params);
    const eps = 1e-5;
    let worst = 0;
    let worstName = '';
    for (const spec of policy.net.specs) {
      let maxAbs = 0;
      for (let i = 0; i < spec.size; i++) maxAbs = Math.max(maxAbs, Math.abs(grads[spec.offset + i]!));
      for (let k = 0; k < 4; k++) {
        const i = spec.offset + rng.int(spec.size);
        const orig = p64[i]!;
        p64[i] = orig + eps;
        const lp = refLoss(policy, p64, seqs, gl, ge);
        p64[i] = orig - eps;
        const lm = refLoss(policy, p64, seqs, gl, ge);
        p64[i] = orig;
        const num = (lp - lm) / (2 * eps);
        const rel = Math.abs(num - grads[i]!) / Math.max(1e-2, maxAbs);
        if (rel > worst) {
          worst = rel;
          worstName = spec.name;
        }
      }
    }
    console.log(`policy whole-model fd: worst rel err ${worst.toExponential(2)} (${worstName})`);
    expect(worst).toBeLessThan(1e-3);
  });
});

describe('PolicyModel behaviour', () => {
  it('matches the float64 reference on sequences longer than one 64-row attention block', () => {
    const cfg = modelConfig('tiny', { maxSeqLen: 160 });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    scrambleWeights(policy.net, 2);
    const seqs = randomSequences({ rng: new Rng(3), lengths: [150, 65], cfg });
    const out = policy.forward(seqs);
    const p64 = Float64Array.from(policy.net.params);
    let maxDiff = 0;
    seqs.forEach((s, i) => {
      const r = referenceHeads({ cfg, specs: policy.net.specs, params: p64, tokens: s, head: 'lm' });
      for (let t = 0; t < s.length; t++) maxDiff = Math.max(maxDiff, Math.abs(out.logprobs[i]![t]! - r.logprobs[t]!));
    });
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it('per-token outputs do not depend on batch composition', () => {
    const { policy, seqs } = setup(false);
    const together = policy.forward(seqs);
    const alone = policy.forward([seqs[2]!]);
    let maxDiff = 0;
    for (let t = 0; t < seqs[2]!.length; t++)
      maxDiff = Math.max(maxDiff, Math.abs(together.logprobs[2]![t]! - alone.logprobs[0]![t]!));
    expect(maxDiff).toBeLessThan(1e-6);
  });

  it('same seed, same weights and outputs', () => {
    const cfg = modelConfig('tiny');
    const a = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(9) });
    const b = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(9) });
    expect(Array.from(a.net.params)).toEqual(Array.from(b.net.params));
    const s = [Int32Array.from([1, 2, 3, 4])];
    expect(Array.from(a.forward(s).logprobs[0]!)).toEqual(Array.from(b.forward(s).logprobs[0]!));
  });

  it('SFT (dL/dlogprob = -1/N) lowers the negative log-likelihood', () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: { ...TEST_OPTIM, lr: 1e-2 }, rng: new Rng(5) });
    const seqs = randomSequences({ rng: new Rng(6), lengths: [12, 8], cfg });
    const nll = () => -policy.forward(seqs).logprobs.reduce((a, l) => a + l.reduce((x, y) => x + y, 0), 0);
    const before = nll();
    const n = seqs.reduce((a, s) => a + s.length - 1, 0);
    for (let i = 0; i < 20; i++) {
      policy.forward(seqs, { train: true });
      policy.backward({ logprobs: seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : -1 / n))) });
      const { gradNorm, lr } = policy.step();
      expect(gradNorm).toBeGreaterThan(0);
      expect(lr).toBeCloseTo(1e-2 * (0.1 + 0.9 * 0.5 * (1 + Math.cos((Math.PI * i) / 100))), 8);
    }
    const after = nll();
    expect(after).toBeLessThan(before * 0.5);
  });

  it('backward without a train forward, and over-long sequences, give clear errors', () => {
    const { policy, seqs } = setup(false);
    policy.forward(seqs);
    expect(() => policy.backward({ logprobs: seqs.map((s) => new Float32Array(s.length)) })).toThrow(
      /forward\(tokens, \{ train: true \}\)/,
    );
    expect(() => policy.forward([new Int32Array(33)])).toThrow(/exceeds the model's maxSeqLen 32/);
    expect(() => policy.forward([Int32Array.from([40])])).toThrow(/outside the model's vocabulary/);
  });
});
