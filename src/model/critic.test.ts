import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { modelConfig } from './config.ts';
import { CriticModel } from './critic.ts';
import { PolicyModel } from './policy.ts';
import { referenceHeads } from './reference-f64.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from './test-helpers.ts';

describe('CriticModel', () => {
  const cfg = modelConfig('tiny');

  it('starts from the policy trunk with a zero head, and owns separate weights', () => {
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM });
    const pSpecs = new Map(policy.net.specs.map((s) => [s.name, s]));
    for (const s of critic.net.specs) {
      const p = pSpecs.get(s.name);
      const mine = Array.from(critic.net.params.subarray(s.offset, s.offset + s.size));
      if (p) expect(mine).toEqual(Array.from(policy.net.params.subarray(p.offset, p.offset + p.size)));
      else expect(mine.every((x) => x === 0)).toBe(true);
    }
    const v = critic.forward([Int32Array.from([1, 2, 3])]).values[0]!;
    expect(Array.from(v)).toEqual([0, 0, 0]);
    critic.net.params[0] = 123;
    expect(policy.net.params[0]).not.toBe(123);
  });

  it('forward and backward match the float64 reference and its finite differences', () => {
    const critic = new CriticModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(2) });
    scrambleWeights(critic.net, 3);
    const rng = new Rng(4);
    const seqs = randomSequences({ rng, lengths: [5, 8, 2], cfg });
    const gv = seqs.map((s) => Float32Array.from(s, () => rng.normal()));
    const out = critic.forward(seqs, { train: true });
    const p64 = Float64Array.from(critic.net.params);
    const refLoss = () =>
      seqs.reduce((acc, s, i) => {
        const r = referenceHeads({ cfg, specs: critic.net.specs, params: p64, tokens: s, head: 'value' });
        return acc + r.values.reduce((a, v, t) => a + v * gv[i]![t]!, 0);
      }, 0);
    let maxDiff = 0;
    seqs.forEach((s, i) => {
      const r = referenceHeads({ cfg, specs: critic.net.specs, params: p64, tokens: s, head: 'value' });
      for (let t = 0; t < s.length; t++) maxDiff = Math.max(maxDiff, Math.abs(out.values[i]![t]! - r.values[t]!));
    });
    expect(maxDiff).toBeLessThan(1e-4);
    critic.backward({ values: gv });
    const grads = critic.net.grads;
    let worst = 0;
    for (const spec of critic.net.specs) {
      let maxAbs = 0;
      for (let i = 0; i < spec.size; i++) maxAbs = Math.max(maxAbs, Math.abs(grads[spec.offset + i]!));
      for (let k = 0; k < 3; k++) {
        const i = spec.offset + rng.int(spec.size);
        const orig = p64[i]!;
        p64[i] = orig + 1e-5;
        const lp = refLoss();
        p64[i] = orig - 1e-5;
        const lm = refLoss();
        p64[i] = orig;
        worst = Math.max(worst, Math.abs((lp - lm) / 2e-5 - grads[i]!) / Math.max(1e-2, maxAbs));
      }
    }
    console.log(
      `critic forward max diff ${maxDiff.toExponential(2)}, whole-model fd worst rel err ${worst.toExponential(2)}`,
    );
    expect(worst).toBeLessThan(1e-3);
  });

  it('regresses values toward a target', () => {
    const critic = new CriticModel({ config: cfg, optim: { ...TEST_OPTIM, lr: 1e-2 }, rng: new Rng(5) });
    const seqs = randomSequences({ rng: new Rng(6), lengths: [7, 7], cfg });
    const mse = () =>
      critic.forward(seqs).values.reduce((a, v) => a + v.reduce((x, y, t) => x + (t === 0 ? 0 : (y - 1) ** 2), 0), 0);
    const before = mse();
    for (let i = 0; i < 30; i++) {
      const { values } = critic.forward(seqs, { train: true });
      critic.backward({ values: values.map((v) => v.map((y, t) => (t === 0 ? 0 : (y - 1) / 12))) });
      critic.step();
    }
    expect(mse()).toBeLessThan(before * 0.1);
  });
});
