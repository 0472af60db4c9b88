import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { modelConfig } from './config.ts';
import { PolicyModel } from './policy.ts';
import { referenceHeads } from './reference-f64.ts';
import { sampledLogprob } from './sampling-transform.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from './test-helpers.ts';

/**
 * The trainer's log-probs under the sampling transform (policy.sampling): temperature and top-p
 * as the rollouts sample, against the float64 reference model's logits put through the transform.
 */
function setup() {
  const cfg = modelConfig('tiny', {});
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  const seqs = randomSequences({ rng: new Rng(3), lengths: [6, 9, 4], cfg });
  return { policy, seqs };
}

/** Reference log-prob of token t of a sequence: the transform's, with the target kept in the nucleus. */
function referenceLogprobs(policy: PolicyModel, params: Float64Array, seq: Int32Array, T: number, topP: number) {
  const r = referenceHeads({ cfg: policy.config, specs: policy.net.specs, params, tokens: seq, head: 'lm' });
  const out = new Float64Array(seq.length);
  for (let t = 1; t < seq.length; t++) {
    const row = r.logits[t - 1]!;
    const lp = sampledLogprob({ row, token: seq[t]!, temperature: T, topP });
    // Outside the nucleus the trainer scores the token over the nucleus plus itself (sampling-transform.ts).
    out[t] = lp > -Infinity ? lp : keptWithTarget(row, seq[t]!, T, topP);
  }
  return out;
}

function keptWithTarget(row: Float64Array, token: number, T: number, topP: number): number {
  const inNucleus = Array.from(row.keys()).filter(
    (j) => sampledLogprob({ row, token: j, temperature: T, topP }) > -Infinity,
  );
  const kept = [...inNucleus, token];
  const mx = Math.max(...kept.map((j) => row[j]! / T));
  return row[token]! / T - mx - Math.log(kept.reduce((a, j) => a + Math.exp(row[j]! / T - mx), 0));
}

describe('PolicyModel under the sampling transform', () => {
  it('gives log_softmax of the logits at temperature 1, top-p 1, bit for bit as before', () => {
    const { policy, seqs } = setup();
    const plain = policy.forward(seqs).logprobs;
    policy.sampling = { temperature: 1, topP: 1 };
    expect(policy.forward(seqs).logprobs).toEqual(plain);
  });

  it('scores tokens under logits / T cut to the top-p nucleus (float64 reference)', () => {
    const { policy, seqs } = setup();
    policy.sampling = { temperature: 0.7, topP: 0.9 };
    const out = policy.forward(seqs);
    const p64 = Float64Array.from(policy.net.params);
    let maxDiff = 0;
    let outside = 0;
    seqs.forEach((s, i) => {
      const want = referenceLogprobs(policy, p64, s, 0.7, 0.9);
      const r = referenceHeads({ cfg: policy.config, specs: policy.net.specs, params: p64, tokens: s, head: 'lm' });
      for (let t = 1; t < s.length; t++) {
        maxDiff = Math.max(maxDiff, Math.abs(out.logprobs[i]![t]! - want[t]!));
        if (sampledLogprob({ row: r.logits[t - 1]!, token: s[t]!, temperature: 0.7, topP: 0.9 }) === -Infinity)
          outside++;
        // Not the temperature-1 log-prob: the transform is applied.
        expect(Math.abs(out.logprobs[i]![t]! - r.logprobs[t]!)).toBeGreaterThan(1e-3);
      }
    });
    expect(outside).toBeGreaterThan(0); // random tokens: some fall outside the nucleus
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it('backward matches float64 finite differences through the transform', () => {
    const { policy, seqs } = setup();
    const T = 0.7;
    const topP = 0.9;
    policy.sampling = { temperature: T, topP };
    const rng = new Rng(4);
    const gl = seqs.map((s) => Float32Array.from(s, () => rng.normal()));
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: gl });
    const grads = policy.net.grads;
    const p64 = Float64Array.from(policy.net.params);
    const loss = (): number =>
      seqs.reduce(
        (a, s, i) => a + referenceLogprobs(policy, p64, s, T, topP).reduce((b, lp, t) => b + gl[i]![t]! * lp, 0),
        0,
      );
    const eps = 1e-5;
    let worst = 0;
    for (const spec of policy.net.specs) {
      let maxAbs = 0;
      for (let i = 0; i < spec.size; i++) maxAbs = Math.max(maxAbs, Math.abs(grads[spec.offset + i]!));
      for (let k = 0; k < 2; k++) {
        const i = spec.offset + rng.int(spec.size);
        const orig = p64[i]!;
        p64[i] = orig + eps;
        const lp = loss();
        p64[i] = orig - eps;
        const lm = loss();
        p64[i] = orig;
        worst = Math.max(worst, Math.abs((lp - lm) / (2 * eps) - grads[i]!) / Math.max(1e-2, maxAbs));
      }
    }
    expect(worst).toBeLessThan(1e-3);
  });
});
