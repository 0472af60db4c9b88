import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { modelConfig, type ModelConfig } from './config.ts';
import { CriticModel } from './critic.ts';
import { MODEL_SHAPES } from './model-shapes.ts';
import { PolicyModel } from './policy.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from './test-helpers.ts';

/** One forward + backward; the gradient buffer and the outputs it came from. */
function policyGrads(cfg: ModelConfig, recompute: boolean): { grads: Float32Array; logprobs: Float32Array[] } {
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  policy.net.recompute = recompute;
  const seqs = randomSequences({ rng: new Rng(3), lengths: [9, 4, 13], cfg });
  const { logprobs } = policy.forward(seqs, { train: true });
  const rng = new Rng(4);
  policy.backward({
    logprobs: seqs.map((s) => Float32Array.from(s, () => rng.normal())),
    entropies: seqs.map((s) => Float32Array.from(s, () => rng.normal())),
  });
  return { grads: policy.net.grads.slice(), logprobs };
}

function criticGrads(cfg: ModelConfig, recompute: boolean): Float32Array {
  const critic = new CriticModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(5) });
  scrambleWeights(critic.net, 6);
  critic.net.recompute = recompute;
  const seqs = randomSequences({ rng: new Rng(7), lengths: [6, 11], cfg });
  critic.forward(seqs, { train: true });
  const rng = new Rng(8);
  critic.backward({ values: seqs.map((s) => Float32Array.from(s, () => rng.normal())) });
  return critic.net.grads.slice();
}

const same = (a: Float32Array, b: Float32Array) => Buffer.from(a.buffer).equals(Buffer.from(b.buffer));

describe('activation recomputation (workspace recompute)', () => {
  const shapes = [
    ['tiny', modelConfig('tiny', { nLayers: 3 })],
    ['qwen3-tiny (GQA, q/k norm, tied)', { ...MODEL_SHAPES['qwen3-tiny'], vocabSize: 300, nLayers: 3 }],
  ] as const;

  it.each(shapes)('gives the %s policy and critic bit-identical gradients', (_name, cfg) => {
    const kept = policyGrads(cfg, false);
    const redone = policyGrads(cfg, true);
    expect(redone.logprobs.map((x) => Array.from(x))).toEqual(kept.logprobs.map((x) => Array.from(x)));
    expect(kept.grads.some((g) => g !== 0)).toBe(true);
    expect(same(redone.grads, kept.grads)).toBe(true);
    expect(same(criticGrads(cfg, true), criticGrads(cfg, false))).toBe(true);
  });

  it('recomputes from the latest train forward in a workspace sized by an earlier, longer batch', () => {
    const cfg = modelConfig('tiny');
    const a = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const b = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    b.net.recompute = true;
    const seqs = randomSequences({ rng: new Rng(2), lengths: [5, 7], cfg });
    const other = randomSequences({ rng: new Rng(3), lengths: [12], cfg });
    for (const p of [a, b]) {
      p.forward(other, { train: true });
      p.forward(seqs, { train: true });
      p.backward({ logprobs: seqs.map((s) => new Float32Array(s.length).fill(-0.5)) });
    }
    expect(same(b.net.grads, a.net.grads)).toBe(true);
  });
});
