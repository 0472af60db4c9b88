import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { maxAbsDiff, maxAbsDiffs } from '../testing/max-diff.ts';
import { expectWithinBounds, trainSideBySide, type ParityBounds } from '../testing/torch-parity.ts';
import { loadPolicyDir } from '../../model/formats/load-policy.ts';
import { modelConfig } from '../../model/network/config.ts';
import { CriticModel } from '../../model/network/critic.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights } from '../../model/network/test-helpers.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { torchFsdpPython } from '../testing/torch-outside-python.ts';
import { TorchTrainer } from './torch-trainer.ts';
import { torchrunCommand } from './trainer-target.ts';

/**
 * The sharded trainer (`crl_torch --shard fsdp`: FSDP2 over two ranks, gloo, one thread each)
 * against the embedded engine, with the bounds of the one-process parity test
 * (torch-trainer.test.ts): the same outputs, gradient norms and weights after two AdamW steps,
 * while each rank holds only its part of the weights and moments. The second step's batch has
 * one sequence, so rank 1 runs the idle sequence FSDP needs every rank to run. Needs a torch with
 * FSDP (CRL_TORCH_FSDP_PYTHON; scripts/torch-root.sh builds one), skips loudly without.
 */
const BOUNDS: ParityBounds = { outputs: 1e-5, gradNormRel: 1e-6, gradNormRelAfterStep: 1e-5, weights: 1e-4 };
const OPTIM: OptimizerConfig = { ...DEFAULT_OPTIMIZER, lr: 1e-2, warmupSteps: 1, totalSteps: 4, gradClip: 0.5 };

const python = torchFsdpPython('torch trainer with FSDP');
const run = python ? describe : describe.skip;

run('TorchTrainer with FSDP (2 ranks, gloo)', () => {
  const command = [...(python ?? []), ...torchrunCommand(2).slice(1), '--shard', 'fsdp', '--threads', '1'];
  const started: TorchTrainer[] = [];
  const start = () => {
    const t = TorchTrainer.start({ command, timeoutMs: 300_000 });
    started.push(t);
    return t;
  };
  afterAll(async () => {
    for (const t of started) await t.close();
  });

  it('matches the embedded engine while each rank holds half the weights and moments', () => {
    const cfg = modelConfig('tiny', { qkNorm: true, nKvHeads: 1 });
    const policy = new PolicyModel({ config: cfg, optim: OPTIM, rng: new Rng(1) });
    scrambleWeights(policy.net, 2);
    const critic = CriticModel.fromPolicy({ policy, optim: OPTIM });
    scrambleWeights(critic.net, 3);
    const before = policy.net.params.slice();
    const trainer = start();
    expect(trainer.info).toMatchObject({ worldSize: 2, shard: 'fsdp' });
    process.stderr.write(`torch fsdp: torch ${trainer.info.torch}, network ${trainer.info.model}\n`);
    const { held } = trainer.init({ policy, critic });
    process.stderr.write(`torch fsdp held per rank: ${JSON.stringify(held)}\n`);
    for (const [kind, total] of [
      ['policy', policy.net.params.length],
      ['critic', critic.net.params.length],
    ] as const) {
      const h = held[kind]!;
      expect(h.params.reduce((a, b) => a + b, 0)).toBe(total); // every element on exactly one rank
      expect(h.moments).toEqual(h.params.map((n) => 2 * n)); // m and v sharded like the weights
      for (const n of h.params) expect(n).toBeLessThan(0.6 * total); // about half each
    }
    const mirror = {
      policy: new PolicyModel({ config: cfg, optim: OPTIM, params: new Float32Array(policy.net.params.length) }),
      critic: new CriticModel({ config: cfg, optim: OPTIM, params: new Float32Array(critic.net.params.length) }),
    };

    const rng = new Rng(4);
    // Five sequences (rank 0 runs three, rank 1 two), then one (rank 1 runs the idle sequence).
    const batches = [[7, 12, 1, 9, 5], [6]].map((lengths) => randomSequences({ rng, lengths, cfg }));
    const report = trainSideBySide({ trainer, policy, critic, mirror, batches, rng });
    // An evaluation forward (no gradient) with fewer sequences than ranks: the idle rank joins it.
    report.evalValues = maxAbsDiffs(critic.forward(batches[1]!).values, trainer.critic.forward(batches[1]!).values);
    process.stderr.write(`torch fsdp parity: ${JSON.stringify(report)}\n`);
    expectWithinBounds(report, BOUNDS);
    // The moments gathered from the shards are the engine's too (their scale is the gradient's).
    expect(maxAbsDiff(policy.net.optimizer.state.m, mirror.policy.net.optimizer.state.m)).toBeLessThan(1e-4);
    expect(maxAbsDiff(critic.net.optimizer.state.v, mirror.critic.net.optimizer.state.v)).toBeLessThan(1e-4);
    // The weights moved: the bounds compare real updates, not two copies of the start.
    expect(maxAbsDiff(mirror.policy.net.params, before)).toBeGreaterThan(1e-3);
  });

  it('saves the policy gathered from its shards as a Hugging Face directory', async () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: OPTIM, rng: new Rng(5) });
    const trainer = start();
    trainer.init({ policy, critic: null });
    const seqs = [Int32Array.from([2, 4, 6, 3])];
    trainer.policy.forward(seqs, { train: true });
    trainer.policy.backward({ logprobs: [Float32Array.from([0, 1, -1, 0.5])] });
    trainer.policy.step();
    const dir = mkdtempSync(join(tmpdir(), 'crl-torch-fsdp-hf-'));
    try {
      trainer.saveHf(dir);
      const loaded = await loadPolicyDir(dir);
      trainer.pullInto('policy', policy.net, { optimizer: false });
      expect(maxAbsDiff(loaded.policy.net.params, policy.net.params)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
