import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPolicyDir } from '../../model/formats/load-policy.ts';
import { LoraAdapter } from '../../model/lora/lora-adapter.ts';
import { resolveLora, type LoraSection } from '../../model/lora/lora-config.ts';
import { modelConfig, type ModelConfig } from '../../model/network/config.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights } from '../../model/network/test-helpers.ts';
import { VocabMap } from '../../model/tokenizer/vocab-map.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { maxAbsDiff, maxAbsDiffs } from '../testing/max-diff.ts';
import { torchAvailable } from '../testing/torch-available.ts';
import { torchPeftPython } from '../testing/torch-outside-python.ts';
import { TorchTrainer } from './torch-trainer.ts';
import { trainerStarter } from './testing/trainer-starter.ts';

/**
 * LoRA on the PyTorch trainer against the embedded adapter (model/lora/lora-adapter.ts), float32
 * on the CPU: the same base, the same A (drawn by crl, sent at init) and B = 0 give the same
 * log-probs and entropies, the same gradient norm over the adapters, and after each AdamW step
 * (clipping, decay and warm-up active, lr 1e-2) the same A and B, so the same merged weights once
 * crl merges the pulled adapters onto its base. The embedded side runs on the merged W0 + s B A,
 * the trainer on W0 x + s B A x (PEFT's form): the outputs differ by that rounding only.
 * Bounds and the figures measured: docs/torch-trainer.md#lora.
 */
const BOUNDS = { outputs: 1e-5, gradNormRel: 1e-6, gradNormRelAfterStep: 1e-5, adapters: 1e-4, merged: 1e-5 };
const OPTIM: OptimizerConfig = { ...DEFAULT_OPTIMIZER, lr: 1e-2, warmupSteps: 1, totalSteps: 4, gradClip: 0.5 };

const CASES: { name: string; cfg: ModelConfig; lora: LoraSection; trimmed: boolean }[] = [
  { name: 'Llama (tiny), all seven projections, r 4', cfg: modelConfig('tiny'), lora: { rank: 4 }, trimmed: false },
  {
    name: 'Qwen3-style (q/k norm, one kv head, tied, trimmed), q/v/down_proj, r 2, alpha 3',
    cfg: modelConfig('tiny', { qkNorm: true, nKvHeads: 1, tiedEmbeddings: true, vocabSize: 21 }),
    lora: { rank: 2, alpha: 3, targets: ['q_proj', 'v_proj', 'down_proj'] },
    trimmed: true,
  },
];

/** A policy with scrambled weights and adapters whose A comes from `seed` (B = 0). */
function adapted(c: (typeof CASES)[number], seed: number) {
  const vocab = c.trimmed
    ? VocabMap.trimmed(
        Array.from({ length: c.cfg.vocabSize - 1 }, (_, i) => 3 * i + 1),
        { name: 'test' },
      )
    : undefined;
  const policy = new PolicyModel({ config: c.cfg, optim: OPTIM, rng: new Rng(1), ...(vocab ? { vocab } : {}) });
  scrambleWeights(policy.net, 2);
  const lora = new LoraAdapter({ net: policy.net, settings: resolveLora(c.lora), optim: OPTIM, rng: new Rng(seed) });
  lora.merge();
  return { policy, lora };
}

/**
 * Two PPO-shaped steps in both engines (a training forward, the same random output gradients,
 * one step), the trainer's adapters pulled into `mirror` after each. Returns the largest
 * differences per step, and checks the learning rates and steps agree.
 */
function sideBySide(trainer: TorchTrainer, c: (typeof CASES)[number]): Record<string, number> {
  const { policy, lora } = adapted(c, 9);
  trainer.init({ policy, critic: null, lora });
  const mirror = adapted(c, 10); // another A: the pull must replace it
  const rng = new Rng(4);
  const raw = randomSequences({ rng, lengths: [7, 12, 1, 9], cfg: c.cfg });
  // A trimmed vocabulary maps real ids (3i + 1), and one id outside it hits the unknown slot.
  const seqs = c.trimmed ? raw.map((s) => s.map((x) => (x === 0 ? 2 : 3 * (x % (c.cfg.vocabSize - 1)) + 1))) : raw;
  const noise = (scale: number) =>
    seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : scale * rng.normal())));
  const report: Record<string, number> = {};
  for (const step of [1, 2]) {
    const a = policy.forward(seqs, { train: true });
    const b = trainer.policy.forward(seqs, { train: true });
    report[`logprobs${step}`] = maxAbsDiffs(a.logprobs, b.logprobs);
    report[`entropies${step}`] = maxAbsDiffs(a.entropies, b.entropies);
    const grads = { logprobs: noise(1), entropies: noise(0.1) };
    policy.backward(grads);
    trainer.policy.backward(grads);
    const sa = lora.step();
    const sb = trainer.policy.step();
    expect(sb.lr).toBe(sa.lr);
    report[`gradNormRel${step}`] = Math.abs(sa.gradNorm - sb.gradNorm) / sa.gradNorm;
    trainer.pullLora(mirror.lora, { optimizer: true });
    expect(mirror.lora.optimizer.state.step).toBe(step);
    report[`adapters${step}`] = maxAbsDiff(lora.params, mirror.lora.params);
    report[`merged${step}`] = maxAbsDiff(policy.net.params, mirror.policy.net.params);
  }
  // The adapters moved (B away from 0), so the bounds compare real updates.
  expect(Math.max(...lora.matrices.map((m) => Math.max(...lora.b(m).map(Math.abs))))).toBeGreaterThan(1e-3);
  return report;
}

function expectWithin(report: Record<string, number>): void {
  for (const [k, v] of Object.entries(report)) {
    const bound = /logprobs|entropies/.test(k)
      ? BOUNDS.outputs
      : k.startsWith('gradNorm')
        ? k.endsWith('1')
          ? BOUNDS.gradNormRel
          : BOUNDS.gradNormRelAfterStep
        : k.startsWith('adapters')
          ? BOUNDS.adapters
          : BOUNDS.merged;
    expect(v, k).toBeLessThanOrEqual(bound);
  }
}

const run = torchAvailable('torch trainer LoRA parity') ? describe : describe.skip;

run('TorchTrainer with LoRA adapters (built-in network)', () => {
  const start = trainerStarter();

  for (const c of CASES)
    it(`matches the embedded adapter: ${c.name}`, () => {
      const trainer = start();
      const report = sideBySide(trainer, c);
      process.stderr.write(`torch LoRA parity (${c.name}, ${trainer.info.adapters}): ${JSON.stringify(report)}\n`);
      expect(trainer.info.adapters).toBe('built-in');
      expectWithin(report);
    });

  it('matches with two ranks under torchrun (each steps the all-reduced adapters)', () => {
    const c = CASES[0]!;
    const trainer = start({ procs: 2 });
    const report = sideBySide(trainer, c);
    process.stderr.write(`torch LoRA parity, 2 ranks (${c.name}): ${JSON.stringify(report)}\n`);
    expect(trainer.info.worldSize).toBe(2);
    expectWithin(report);
  });

  it('starts from stepped adapters as --resume does, keeps the base frozen, and saves the merged weights', async () => {
    const c = CASES[0]!;
    const { policy, lora } = adapted(c, 9);
    const base = Float32Array.from(policy.net.params);
    const seqs = randomSequences({ rng: new Rng(6), lengths: [5, 8], cfg: c.cfg });
    // A step in this process: B, the moments and the step are no longer the start's.
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : 1))) });
    lora.step();
    const merged = Float32Array.from(policy.net.params);
    const trainer = start();
    trainer.init({ policy, critic: null, lora });
    // init sent the base and put the merged weights back, bit for bit.
    expect(maxAbsDiff(policy.net.params, merged)).toBe(0);
    const mirror = adapted(c, 10);
    trainer.pullLora(mirror.lora, { optimizer: true });
    expect(Array.from(mirror.lora.params)).toEqual(Array.from(lora.params));
    expect(Array.from(mirror.lora.optimizer.state.v)).toEqual(Array.from(lora.optimizer.state.v));
    expect(mirror.lora.optimizer.state.step).toBe(1);
    const ours = policy.forward(seqs).logprobs;
    expect(maxAbsDiffs(ours, trainer.policy.forward(seqs).logprobs)).toBeLessThan(BOUNDS.outputs);
    expect(() => trainer.pullInto('policy', mirror.policy.net, { optimizer: false })).toThrow(/pullLora/);

    const dir = mkdtempSync(join(tmpdir(), 'crl-torch-lora-hf-'));
    try {
      trainer.saveHf(dir);
      const saved = (await loadPolicyDir(dir)).policy.net;
      // Tensors without adapters are the base exactly (it is frozen); adapted ones are the merge.
      const adaptedAt = new Set(lora.matrices.map((m) => m.offset));
      for (const s of saved.specs) {
        const got = saved.params.subarray(s.offset, s.offset + s.size);
        if (adaptedAt.has(s.offset))
          expect(maxAbsDiff(got, merged.subarray(s.offset, s.offset + s.size)), s.name).toBeLessThan(1e-6);
        else expect(maxAbsDiff(got, base.subarray(s.offset, s.offset + s.size)), s.name).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const peft = torchPeftPython('torch trainer LoRA on PEFT');
(peft ? describe : describe.skip)('TorchTrainer with LoRA adapters (transformers classes, PEFT)', () => {
  const start = trainerStarter();
  for (const c of CASES)
    it(`matches the embedded adapter: ${c.name}`, () => {
      const command = [...peft!, '-m', 'crl_torch', '--model-impl', 'transformers', '--threads', '1'];
      const trainer = start({ command, timeoutMs: 300_000 });
      const report = sideBySide(trainer, c);
      process.stderr.write(
        `torch LoRA parity on PEFT (${c.name}, ${trainer.info.adapters}): ${JSON.stringify(report)}\n`,
      );
      expect(trainer.info.adapters).toMatch(/^peft \d/);
      expectWithin(report);
    });
});
