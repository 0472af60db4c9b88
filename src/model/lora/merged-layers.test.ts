import { describe, expect, it } from 'vitest';
import { nativeAddon } from '../../tensor/native.ts';
import { Rng } from '../../util/random.ts';
import { modelConfig } from '../network/config.ts';
import { CriticModel } from '../network/critic.ts';
import { PolicyModel } from '../network/policy.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../network/test-helpers.ts';
import type { WeightPrecision } from '../network/weight-precision.ts';
import { trainingMemoryPlan } from '../network/memory-plan.ts';
import { loraMemory, resolveLora, type LoraTarget } from './lora-config.ts';
import { LoraAdapter, type LoraStorage } from './lora-adapter.ts';

const cfg = modelConfig('tiny', { nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true });

/** A policy with LoRA adapters in `storage`; the same weights and adapters for the same arguments. */
function adapted(storage: LoraStorage, o: { bf16: boolean; targets?: LoraTarget[] }) {
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  if (o.bf16) {
    const bits = new Uint32Array(policy.net.params.buffer);
    for (let k = 0; k < bits.length; k++) bits[k] = bits[k]! & 0xffff0000; // a base shipped in bf16
  }
  const settings = resolveLora({ rank: 3, alpha: 6, ...(o.targets ? { targets: o.targets } : {}) });
  const lora = new LoraAdapter({ net: policy.net, settings, optim: TEST_OPTIM, rng: new Rng(5), storage });
  const rng = new Rng(9);
  for (const m of lora.matrices) lora.b(m).forEach((_, k, b) => (b[k] = rng.next() - 0.5)); // a non-zero update
  lora.merge();
  return { policy, lora };
}

/** One PPO-shaped update: forward, backward of a probe loss, the adapters' step. */
function update(policy: PolicyModel, lora: LoraAdapter) {
  const seqs = randomSequences({ rng: new Rng(3), lengths: [6, 9, 4], cfg });
  const out = policy.forward(seqs, { train: true });
  policy.backward({ logprobs: out.logprobs.map((l) => l.map((_, t) => (t % 3) - 1)) });
  const grads = Float32Array.from(lora.grads);
  const { gradNorm } = lora.step();
  return { logprobs: out.logprobs, grads, gradNorm, after: policy.forward(seqs).logprobs };
}

const requireNative = process.env.CRL_REQUIRE_NATIVE === '1';

// Storage 'base' is chosen only where the native addon is loaded (lora-trainer-models.ts
// loraStorage): its bit-for-bit equality with the merged storage holds for the native merge, and the
// TypeScript kernels (CRL_NATIVE=0) sum in another order (last-bit differences), so without the
// addon there is nothing of it to check.
describe.skipIf(!nativeAddon && !requireNative)("LoRA storage 'base' (merged-layers.ts)", () => {
  for (const bf16 of [true, false]) {
    it(`trains bit for bit as the merged storage (${bf16 ? 'bf16' : 'f32'} base)`, () => {
      const merged = adapted('merged', { bf16 });
      const base = adapted('base', { bf16 });
      expect(base.lora.base.format).toBe(bf16 ? 'bf16' : 'f32');
      for (const recompute of [false, true]) {
        merged.policy.net.recompute = base.policy.net.recompute = recompute;
        const a = update(merged.policy, merged.lora);
        const b = update(base.policy, base.lora);
        expect(b.logprobs).toEqual(a.logprobs);
        expect(b.grads).toEqual(a.grads);
        expect(b.gradNorm).toBe(a.gradNorm);
        expect(b.after).toEqual(a.after);
        expect(base.lora.params).toEqual(merged.lora.params);
      }
    });
  }

  it('releases the f32 layer products and keeps everything else', () => {
    const merged = adapted('merged', { bf16: true });
    const { policy, lora } = adapted('base', { bf16: true });
    const held = new Set<number>();
    for (const r of lora.layers!.ranges()) for (let k = 0; k < r.size; k++) held.add(r.offset + k);
    const p = policy.net.params;
    for (let k = 0; k < p.length; k++) expect(p[k]).toBe(held.has(k) ? 0 : merged.policy.net.params[k]);
    // The frozen copy is every product's, in bf16: half the bytes the network held in f32.
    expect(lora.base.bytes).toBe(2 * held.size);
    expect(() => lora.withBaseWeights(() => 0)).toThrow(/storage 'base'/);
  });

  it('is what the memory plan counts', () => {
    const { policy, lora } = adapted('base', { bf16: false });
    const counts = loraMemory(policy, lora.settings, 'base');
    expect(counts).toEqual({ frozenBytes: lora.base.bytes, adapterParams: lora.params.length, storage: 'base' });
    const line = trainingMemoryPlan({ policy: cfg, criticLayers: null, lengths: [8], lora: counts }).lines[0]!;
    const held = lora.layers!.ranges().reduce((a, r) => a + r.size, 0);
    const { scratchBytes } = lora.layers!;
    expect(line.bytes).toBe(
      4 * (policy.net.params.length - held) + lora.base.bytes + scratchBytes + 16 * lora.params.length,
    );
  });

  it("gives whole-weight readers the merged storage's values: net.tensor (checkpoints) and a critic's trunk copy", () => {
    const merged = adapted('merged', { bf16: true });
    const base = adapted('base', { bf16: true });
    for (const s of base.policy.net.specs)
      expect(base.policy.net.tensor(s)).toEqual(merged.policy.net.params.subarray(s.offset, s.offset + s.size));
    const critic = (p: PolicyModel) => CriticModel.fromPolicy({ policy: p, optim: TEST_OPTIM, layers: 1 }).net.params;
    expect(critic(base.policy)).toEqual(critic(merged.policy));
  });

  it('materializes the products no adapter targets as the base itself', () => {
    const targets: LoraTarget[] = ['k_proj', 'down_proj'];
    const merged = adapted('merged', { bf16: false, targets });
    const base = adapted('base', { bf16: false, targets });
    const src = base.policy.net.layerSource!;
    merged.policy.net.w.layers.forEach((lw, l) => {
      const got = src(l);
      for (const p of ['qkv', 'o', 'gateUp', 'down'] as const) expect(got[p]).toEqual(lw[p]);
      expect(got.ln1).toBe(base.policy.net.w.layers[l]!.ln1);
    });
  });

  for (const precision of ['bf16', 'f32'] as WeightPrecision[]) {
    it(`gives the sampler the merged storage's ${precision} copy, remade after a step`, () => {
      const merged = adapted('merged', { bf16: true });
      const base = adapted('base', { bf16: true });
      const same = () => {
        const a = merged.policy.net.inferenceWeights(precision);
        const b = base.policy.net.inferenceWeights(precision);
        expect(b?.layers).toEqual(a?.layers);
      };
      same();
      update(merged.policy, merged.lora);
      update(base.policy, base.lora);
      same();
    });
  }
});
