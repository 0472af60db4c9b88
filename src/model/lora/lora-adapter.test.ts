import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { modelConfig } from '../network/config.ts';
import { PolicyModel } from '../network/policy.ts';
import { referenceHeads } from '../network/reference-f64.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../network/test-helpers.ts';
import { trainingMemoryPlan } from '../network/memory-plan.ts';
import { loraMemory, resolveLora } from './lora-config.ts';
import { LoraAdapter, type AdaptedMatrix } from './lora-adapter.ts';

/** Grouped-query attention with q/k norm: every projection has its own shape. */
function setup() {
  const cfg = modelConfig('tiny', { nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true });
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  const before = Float32Array.from(policy.net.params);
  const settings = resolveLora({ rank: 3, alpha: 6 });
  const lora = new LoraAdapter({ net: policy.net, settings, optim: TEST_OPTIM, rng: new Rng(5) });
  const seqs = randomSequences({ rng: new Rng(3), lengths: [6, 9, 4], cfg });
  return { policy, lora, before, seqs };
}

/** The whole policy's probe loss sum(G * logprob) in f64 at the merged weights W0 + s B A. */
function refLoss(policy: PolicyModel, lora: LoraAdapter, seqs: Int32Array[], gl: Float32Array[]): number {
  const p = Float64Array.from(policy.net.params);
  const { rank: r, alpha } = lora.settings;
  for (const m of lora.matrices) {
    const a = lora.a(m);
    const b = lora.b(m);
    const base = lora.base.read(m.baseOffset, m.out * m.in, new Float32Array(m.out * m.in));
    for (let o = 0; o < m.out; o++)
      for (let i = 0; i < m.in; i++) {
        let s = 0;
        for (let k = 0; k < r; k++) s += b[o * r + k]! * a[k * m.in + i]!;
        p[m.offset + o * m.in + i] = base[o * m.in + i]! + (alpha / r) * s;
      }
  }
  let loss = 0;
  seqs.forEach((s, i) => {
    const ref = referenceHeads({ cfg: policy.config, specs: policy.net.specs, params: p, tokens: s, head: 'lm' });
    for (let t = 0; t < s.length; t++) loss += gl[i]![t]! * ref.logprobs[t]!;
  });
  return loss;
}

describe('LoraAdapter', () => {
  it('starts on the base exactly, adapts every projection by default, and the step moves only them', () => {
    const { policy, lora, before, seqs } = setup();
    expect(new Set(lora.matrices.map((m) => m.target)).size).toBe(7);
    lora.merge();
    expect(policy.net.params).toEqual(before);
    const out = policy.forward(seqs, { train: true });
    policy.backward({ logprobs: out.logprobs.map((l) => l.map(() => -1)) });
    const version = policy.net.version;
    const { gradNorm } = lora.step();
    expect(gradNorm).toBeGreaterThan(0);
    expect(policy.net.version).toBeGreaterThan(version);
    expect(policy.net.grads.every((g) => g === 0)).toBe(true);
    const adapted = new Set<number>();
    for (const m of lora.matrices) for (let k = 0; k < m.out * m.in; k++) adapted.add(m.offset + k);
    let moved = 0;
    for (let k = 0; k < before.length; k++) {
      if (adapted.has(k)) moved += policy.net.params[k] !== before[k] ? 1 : 0;
      else expect(policy.net.params[k]).toBe(before[k]);
    }
    expect(moved).toBeGreaterThan(0);
    // Step 1 saw B = 0, so dA was 0: A kept its init and only B moved.
    expect(lora.matrices.some((m) => lora.b(m).some((x) => x !== 0))).toBe(true);
  });

  it("gives A and B the whole model's gradients (f64 finite differences)", () => {
    const { policy, lora, seqs } = setup();
    const rng = new Rng(9);
    // B away from 0, so both A's and B's gradients are non-zero.
    for (const m of lora.matrices) {
      const b = lora.b(m);
      for (let k = 0; k < b.length; k++) b[k] = 0.3 * rng.normal();
    }
    lora.merge();
    const gl = seqs.map((s) => Float32Array.from(s, () => rng.normal()));
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: gl });
    let worst = 0;
    const probe = (m: AdaptedMatrix, which: 'a' | 'b', k: number) => {
      const x = which === 'a' ? lora.a(m) : lora.b(m);
      const g = which === 'a' ? lora.a(m, lora.grads) : lora.b(m, lora.grads);
      const orig = x[k]!;
      const eps = 1e-3;
      x[k] = orig + eps;
      const lp = refLoss(policy, lora, seqs, gl);
      x[k] = orig - eps;
      const lm = refLoss(policy, lora, seqs, gl);
      x[k] = orig;
      const num = (lp - lm) / (2 * eps);
      worst = Math.max(worst, Math.abs(num - g[k]!) / Math.max(1e-2, Math.abs(num)));
    };
    for (const m of lora.matrices)
      for (const which of ['a', 'b'] as const)
        for (let t = 0; t < 3; t++) probe(m, which, rng.int(3 * (which === 'a' ? m.in : m.out)));
    console.log(`LoRA gradients vs f64 finite differences: max relative difference ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-2);
  });

  it("is what the memory plan counts, and the plan's policy line shrinks by the gradients and moments", () => {
    const { policy, lora } = setup();
    const counts = loraMemory(policy, lora.settings);
    expect(counts).toEqual({ frozenBytes: lora.base.bytes, adapterParams: lora.params.length, storage: 'merged' });
    expect(lora.base.format).toBe('f32'); // scrambled f32 weights
    const plan = (l?: typeof counts) =>
      trainingMemoryPlan({ policy: policy.config, criticLayers: null, lengths: [8], lora: l }).lines[0]!.bytes;
    const p = policy.net.params.length;
    expect(plan()).toBe(16 * p);
    expect(plan(counts)).toBe(4 * p + lora.base.bytes + 16 * lora.params.length);
  });

  it('keeps a bf16 base in bf16, and merges it to the same bits as an f32 copy would', () => {
    const { policy, lora: first, before } = setup();
    const k0 = first.matrices[0]!.offset; // an element of an adapted matrix
    const bf16 = Float32Array.from(before);
    const bits = new Uint32Array(bf16.buffer);
    for (let k = 0; k < bits.length; k++) bits[k] = bits[k]! & 0xffff0000; // a base shipped in bf16
    const merged = (params: Float32Array) => {
      policy.net.params.set(params);
      const lora = new LoraAdapter({
        net: policy.net,
        settings: resolveLora({ rank: 3 }),
        optim: TEST_OPTIM,
        rng: new Rng(5),
      });
      for (const m of lora.matrices) lora.b(m).fill(0.25);
      lora.merge();
      return { format: lora.base.format, bytes: lora.base.bytes, w: Float32Array.from(policy.net.params) };
    };
    const half = merged(bf16);
    expect(half.format).toBe('bf16');
    // One low bit set in an adapted matrix forces the f32 copy: twice the bytes, the same merge elsewhere.
    bits[k0]! |= 1;
    const full = merged(bf16);
    expect(full.format).toBe('f32');
    expect(full.bytes).toBe(2 * half.bytes);
    full.w[k0] = half.w[k0]!;
    expect(full.w).toEqual(half.w);
  });
});
