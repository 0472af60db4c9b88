import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { modelConfig } from './config.ts';
import { criticConfig, CriticModel } from './critic.ts';
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

  it("with a frozen embedding: trains everything else, and never touches the table's gradient or moments", () => {
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM, embedding: 'frozen' });
    const before = Float32Array.from(critic.net.params);
    const seqs = randomSequences({ rng: new Rng(4), lengths: [5, 7], cfg });
    for (let i = 0; i < 2; i++) {
      const { values } = critic.forward(seqs, { train: true });
      critic.backward({ values: values.map((v) => v.map((_, t) => (t === 0 ? 0 : 1))) });
      critic.step();
    }
    const e = critic.net.specs.find((s) => s.name === 'model.embed_tokens.weight')!;
    const range = (a: Float32Array) => a.subarray(e.offset, e.offset + e.size);
    expect(range(critic.net.params)).toEqual(range(before));
    expect(range(critic.net.grads).every((x) => x === 0)).toBe(true);
    expect(range(critic.net.optimizer.state.v).every((x) => x === 0)).toBe(true);
    const rest = critic.net.params.subarray(e.offset + e.size);
    expect(rest).not.toEqual(before.subarray(e.offset + e.size));
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

  it("with layers K: the policy's embeddings, first K layers and final norm, matching the float64 reference", () => {
    const deep = { ...cfg, nLayers: 3 };
    const policy = new PolicyModel({ config: deep, optim: TEST_OPTIM, rng: new Rng(7) });
    scrambleWeights(policy.net, 8);
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM, layers: 2 });
    expect(critic.config).toEqual({ ...deep, nLayers: 2 });
    const names = critic.net.specs.map((s) => s.name);
    expect(names.filter((n) => n.startsWith('model.layers.2.'))).toEqual([]);
    expect(names.filter((n) => n.startsWith('model.layers.1.')).length).toBeGreaterThan(0);
    const pSpecs = new Map(policy.net.specs.map((s) => [s.name, s]));
    for (const s of critic.net.specs) {
      const p = pSpecs.get(s.name);
      if (!p) continue; // the value head
      const mine = critic.net.params.subarray(s.offset, s.offset + s.size);
      expect(Array.from(mine)).toEqual(Array.from(policy.net.params.subarray(p.offset, p.offset + p.size)));
    }
    // The two-layer critic is a two-layer network: its values are the float64 reference's for that shape.
    critic.net.w.score!.fill(0.3);
    const seq = randomSequences({ rng: new Rng(9), lengths: [6], cfg: deep })[0]!;
    const got = critic.forward([seq]).values[0]!;
    const ref = referenceHeads({
      cfg: critic.config,
      specs: critic.net.specs,
      params: Float64Array.from(critic.net.params),
      tokens: seq,
      head: 'value',
    });
    let maxDiff = 0;
    for (let t = 0; t < seq.length; t++) maxDiff = Math.max(maxDiff, Math.abs(got[t]! - ref.values[t]!));
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it("without layers, or with all of them, is the critic of the policy's own shape", () => {
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(10) });
    const a = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM });
    const b = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM, layers: cfg.nLayers });
    expect(a.config).toEqual(policy.config);
    expect(b.config).toEqual(policy.config);
    expect(Buffer.from(b.net.params.buffer).equals(Buffer.from(a.net.params.buffer))).toBe(true);
  });

  it("refuses a layer count outside 1 .. the policy's layers", () => {
    for (const k of [0, 3, 1.5])
      expect(() => criticConfig(cfg, k)).toThrow(
        `critic layers: ${k} is not a whole number from 1 to the policy's 2 layers`,
      );
  });
});
