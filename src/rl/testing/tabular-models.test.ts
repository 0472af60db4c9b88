import { describe, expect, it } from 'vitest';
import { TabularCritic, TabularPolicy } from './tabular-models.ts';

describe('tabular test models: backward matches finite differences', () => {
  it('policy: d(sum g*logp + e*H)/d logits', () => {
    const policy = new TabularPolicy({ vocab: 3, lr: 1 });
    policy.logits.set([0.1, -0.4, 0.3, 0.7, 0.2, -0.5, 0, 0.9, -0.2]);
    const seqs = [Int32Array.from([0, 1, 2, 2]), Int32Array.from([2, 0])];
    const g = [Float32Array.from([0, 0.5, -1, 2]), Float32Array.from([0, 0.7])];
    const e = [Float32Array.from([0, 0.3, 0.1, -0.2]), Float32Array.from([0, 1])];
    const objective = (): number => {
      const f = policy.forward(seqs);
      let sum = 0;
      f.logprobs.forEach((lp, s) => lp.forEach((v, t) => (sum += g[s]![t]! * v + e[s]![t]! * f.entropies[s]![t]!)));
      return sum;
    };
    const saved = Float64Array.from(policy.logits);
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: g, entropies: e });
    // Read the accumulated gradient through an SGD step with lr 1: delta = -grad.
    policy.step();
    const grad = saved.map((v, i) => v - policy.logits[i]!);
    policy.logits.set(saved);
    const h = 3e-3; // forward outputs float32: a larger step keeps rounding noise below the tolerance
    for (let i = 0; i < saved.length; i++) {
      policy.logits[i] = saved[i]! + h;
      const up = objective();
      policy.logits[i] = saved[i]! - h;
      const down = objective();
      policy.logits[i] = saved[i]!;
      expect(Math.abs((up - down) / (2 * h) - grad[i]!)).toBeLessThan(5e-4);
    }
  });

  it('critic: values[t] = table[x[t-1]], gradient accumulates per row', () => {
    const critic = new TabularCritic({ vocab: 3, lr: 1 });
    critic.table.set([0.5, -1, 2]);
    const { values } = critic.forward([Int32Array.from([2, 0, 0])], { train: true });
    expect(Array.from(values[0]!)).toEqual([0, 2, 0.5]);
    critic.backward({ values: [Float32Array.from([9, 1, 3])] });
    critic.step();
    expect(Array.from(critic.table)).toEqual([0.5 - 3, -1, 2 - 1]);
  });
});
