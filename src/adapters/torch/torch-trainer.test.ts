import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { maxAbsDiff } from '../testing/max-diff.ts';
import { expectWithinBounds, trainSideBySide, type ParityBounds } from '../testing/torch-parity.ts';
import { loadPolicyDir } from '../../model/formats/load-policy.ts';
import { modelConfig, type ModelConfig } from '../../model/network/config.ts';
import { CriticModel } from '../../model/network/critic.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights } from '../../model/network/test-helpers.ts';
import { VocabMap } from '../../model/tokenizer/vocab-map.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { torchAvailable } from '../testing/torch-available.ts';
import { TorchTrainerError } from './torch-trainer.ts';
import { trainerStarter } from './testing/trainer-starter.ts';

/**
 * Parity, float32 on the CPU: the same weights and batch give the same log-probs, entropies,
 * values, gradient norms and updated weights (after two AdamW steps with clipping, weight decay
 * and warm-up) in the embedded engine and in the PyTorch process. The bounds are the ones
 * docs/torch-trainer.md states. Weights are bounded in absolute terms at lr = 1e-2: Adam's first
 * steps divide each gradient by its own magnitude, so an element whose gradient is near 0 turns
 * a 1e-7 relative gradient difference into a visible fraction of lr. Which BLAS torch calls moves
 * the gradients' rounding (OpenBLAS: 7.7e-5 on the tiny Llama, netlib: 1.2e-5), so the bound is
 * lr / 100, not the figure of one library; the second step's gradient starts from those weights,
 * so its norm is held to 1e-5 (OpenBLAS: 1.4e-6), the first step's to 1e-6.
 */
const BOUNDS: ParityBounds = { outputs: 1e-5, gradNormRel: 1e-6, gradNormRelAfterStep: 1e-5, weights: 1e-4 };

/** Clipping, decay and warm-up all active, so every branch of AdamW is compared. */
const OPTIM: OptimizerConfig = { ...DEFAULT_OPTIMIZER, lr: 1e-2, warmupSteps: 1, totalSteps: 4, gradClip: 0.5 };

const SHAPES: { name: string; cfg: ModelConfig; trimmed: boolean }[] = [
  { name: 'Llama (tiny)', cfg: modelConfig('tiny'), trimmed: false },
  {
    name: 'Qwen3-style: q/k norm, grouped-query attention, tied embeddings, trimmed vocabulary',
    cfg: modelConfig('tiny', { qkNorm: true, nKvHeads: 1, tiedEmbeddings: true, vocabSize: 21 }),
    trimmed: true,
  },
];

const run = torchAvailable('torch trainer parity') ? describe : describe.skip;

run('TorchTrainer', () => {
  const start = trainerStarter();

  for (const shape of SHAPES) {
    it(`matches the embedded engine: ${shape.name}`, () => {
      const vocab = shape.trimmed
        ? VocabMap.trimmed(
            Array.from({ length: shape.cfg.vocabSize - 1 }, (_, i) => 3 * i + 1),
            { name: 'test' },
          )
        : undefined;
      const policy = new PolicyModel({ config: shape.cfg, optim: OPTIM, rng: new Rng(1), ...(vocab ? { vocab } : {}) });
      scrambleWeights(policy.net, 2);
      const critic = CriticModel.fromPolicy({ policy, optim: OPTIM });
      scrambleWeights(critic.net, 3); // a non-zero value head, so values and their gradients are real
      const trainer = start();
      trainer.init({ policy, critic });
      const mirror = new PolicyModel({
        config: shape.cfg,
        optim: OPTIM,
        params: new Float32Array(policy.net.params.length),
        ...(vocab ? { vocab } : {}),
      });
      const criticMirror = new CriticModel({
        config: shape.cfg,
        optim: OPTIM,
        params: new Float32Array(critic.net.params.length),
        ...(vocab ? { vocab } : {}),
      });

      const rng = new Rng(4);
      const raw = randomSequences({ rng, lengths: [7, 12, 1, 9], cfg: shape.cfg });
      // Real ids: a trimmed vocabulary maps them (3i + 1), and one id outside it hits the unknown slot.
      const seqs = vocab ? raw.map((s) => s.map((x) => (x === 0 ? 2 : 3 * (x % (shape.cfg.vocabSize - 1)) + 1))) : raw;
      const mirrors = { policy: mirror, critic: criticMirror };
      const report = trainSideBySide({ trainer, policy, critic, mirror: mirrors, batches: [seqs, seqs], rng });
      process.stderr.write(`torch parity (${shape.name}): ${JSON.stringify(report)}\n`);
      expectWithinBounds(report, BOUNDS);
      // The weights moved: the bounds compare real updates, not two copies of the start.
      expect(maxAbsDiff(policy.net.params, new Float32Array(policy.net.params.length))).toBeGreaterThan(0.1);
    });
  }

  it('saves the policy as a Hugging Face directory that crl loads with the same weights', async () => {
    const cfg = modelConfig('tiny', { qkNorm: true, nKvHeads: 1, vocabSize: 9 });
    const vocab = VocabMap.trimmed([2, 4, 6, 8, 10, 12, 14, 16], { name: 'test' });
    const policy = new PolicyModel({ config: cfg, optim: OPTIM, rng: new Rng(5), vocab });
    const trainer = start();
    trainer.init({ policy, critic: null });
    const seqs = [Int32Array.from([2, 4, 6, 3])];
    trainer.policy.forward(seqs, { train: true });
    trainer.policy.backward({ logprobs: [Float32Array.from([0, 1, -1, 0.5])] });
    trainer.policy.step();
    const dir = mkdtempSync(join(tmpdir(), 'crl-torch-hf-'));
    try {
      trainer.saveHf(dir);
      const loaded = await loadPolicyDir(dir);
      expect(loaded.source).toBe('hf');
      expect(loaded.policy.vocab.ids).toEqual(vocab.ids);
      trainer.pullInto('policy', policy.net, { optimizer: false });
      expect(maxAbsDiff(loaded.policy.net.params, policy.net.params)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers a backward without a training forward with an error that names the trainer', () => {
    const policy = new PolicyModel({ config: modelConfig('tiny'), optim: OPTIM, rng: new Rng(1) });
    const trainer = start();
    trainer.init({ policy, critic: null });
    trainer.policy.forward([Int32Array.from([1, 2, 3])]);
    expect(() => trainer.policy.backward({ logprobs: [new Float32Array(3)] })).toThrow(
      /the torch trainer \(.*\) failed backward: RuntimeError: backward\(\) needs a preceding forward/,
    );
    // The trainer keeps serving after an error.
    expect(trainer.policy.forward([Int32Array.from([1, 2])]).logprobs[0]!.length).toBe(2);
  });

  it('reports a trainer that exits as one clear error', () => {
    const err = (() => {
      try {
        start({ command: ['/usr/bin/python3', '-c', 'import sys; sys.stderr.write("no GPU here\\n"); sys.exit(3)'] });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(TorchTrainerError);
    expect((err as Error).message).toMatch(/^the torch trainer \(.*\) exited with code 3 during hello: no GPU here$/);
  });

  it('reports a trainer that does not answer within the deadline, and stops it', () => {
    expect(() =>
      start({ command: ['/usr/bin/python3', '-c', 'import sys; sys.stdin.read()'], timeoutMs: 1500 }),
    ).toThrow(/^the torch trainer \(.*\) gave no answer within 2 s and was stopped during hello$/);
  });
});
