import { afterAll, describe, expect, it } from 'vitest';
import { maxAbsDiff, maxAbsDiffs } from '../testing/max-diff.ts';
import { modelConfig } from '../../model/network/config.ts';
import { CriticModel } from '../../model/network/critic.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights } from '../../model/network/test-helpers.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { torchAvailable } from '../testing/torch-available.ts';
import { TorchTrainer, TorchTrainerError } from './torch-trainer.ts';
import { DEFAULT_TORCH_COMMAND, torchrunCommand } from './trainer-target.ts';

/**
 * Several trainer processes under torchrun (two ranks over gloo, one thread each): the same
 * weights and batch give the same outputs, gradient norms and updated weights as one process,
 * within the float32 bounds docs/torch-trainer.md states (the two ranks sum their shares'
 * gradients in another order than one process's single backward does). A rank that dies is an
 * error naming the trainer.
 */
const BOUNDS = { outputs: 1e-5, gradNormRel: 1e-6, weights: 1e-5 };
const OPTIM: OptimizerConfig = { ...DEFAULT_OPTIMIZER, lr: 1e-2, warmupSteps: 1, totalSteps: 4, gradClip: 0.5 };
const ONE = [...DEFAULT_TORCH_COMMAND, '--threads', '1'];
const TWO = [...torchrunCommand(2), '--threads', '1'];

const run = torchAvailable('torch trainer under torchrun') ? describe : describe.skip;

run('TorchTrainer under torchrun (2 ranks, gloo)', () => {
  const started: TorchTrainer[] = [];
  const start = (command: readonly string[]) => {
    const t = TorchTrainer.start({ command, timeoutMs: 300_000 });
    started.push(t);
    return t;
  };
  afterAll(async () => {
    for (const t of started) await t.close();
  });

  it('matches one process: outputs, gradient norms and weights after two steps', () => {
    const cfg = modelConfig('tiny', { qkNorm: true, nKvHeads: 1 });
    const policy = new PolicyModel({ config: cfg, optim: OPTIM, rng: new Rng(1) });
    scrambleWeights(policy.net, 2);
    const critic = CriticModel.fromPolicy({ policy, optim: OPTIM });
    scrambleWeights(critic.net, 3);
    const one = start(ONE);
    const two = start(TWO);
    expect(one.info.worldSize).toBe(1);
    expect(two.info.worldSize).toBe(2);
    one.init({ policy, critic });
    two.init({ policy, critic });
    const mirrors = [1, 2].map(() => ({
      policy: new PolicyModel({ config: cfg, optim: OPTIM, params: new Float32Array(policy.net.params.length) }),
      critic: new CriticModel({ config: cfg, optim: OPTIM, params: new Float32Array(critic.net.params.length) }),
    }));

    const rng = new Rng(4);
    // Five sequences (rank 0 runs three, rank 1 two), then one (rank 1 runs none).
    const batches = [[7, 12, 1, 9, 5], [6]].map((lengths) => randomSequences({ rng, lengths, cfg }));
    const report: Record<string, number> = {};
    batches.forEach((seqs, stepNo) => {
      const [a, b] = [one, two].map((t) => t.policy.forward(seqs, { train: true }));
      report[`logprobs${stepNo}`] = maxAbsDiffs(a!.logprobs, b!.logprobs);
      report[`entropies${stepNo}`] = maxAbsDiffs(a!.entropies, b!.entropies);
      const glp = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : rng.normal())));
      const gent = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : 0.1 * rng.normal())));
      const [sa, sb] = [one, two].map((t) => {
        t.policy.backward({ logprobs: glp, entropies: gent });
        return t.policy.step();
      });
      report[`policyGradNormRel${stepNo}`] = Math.abs(sa!.gradNorm - sb!.gradNorm) / sa!.gradNorm;

      const [va, vb] = [one, two].map((t) => t.critic.forward(seqs, { train: true }).values);
      report[`values${stepNo}`] = maxAbsDiffs(va!, vb!);
      const gv = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : rng.normal())));
      const [ca, cb] = [one, two].map((t) => {
        t.critic.backward({ values: gv });
        return t.critic.step();
      });
      report[`criticGradNormRel${stepNo}`] = Math.abs(ca!.gradNorm - cb!.gradNorm) / ca!.gradNorm;
      [one, two].forEach((t, i) => {
        t.pullInto('policy', mirrors[i]!.policy.net, { optimizer: true });
        t.pullInto('critic', mirrors[i]!.critic.net, { optimizer: true });
      });
      report[`policyWeights${stepNo}`] = maxAbsDiff(mirrors[0]!.policy.net.params, mirrors[1]!.policy.net.params);
      report[`criticWeights${stepNo}`] = maxAbsDiff(mirrors[0]!.critic.net.params, mirrors[1]!.critic.net.params);
    });
    // An evaluation forward (no gradient) is shared out too.
    const evalSeqs = batches[0]!;
    report.evalValues = maxAbsDiffs(one.critic.forward(evalSeqs).values, two.critic.forward(evalSeqs).values);
    process.stderr.write(`torch 2 ranks vs 1: ${JSON.stringify(report)}\n`);
    for (const [k, v] of Object.entries(report)) {
      const bound = /logprobs|entropies|alues/.test(k)
        ? BOUNDS.outputs
        : k.includes('GradNorm')
          ? BOUNDS.gradNormRel
          : BOUNDS.weights;
      expect(v, k).toBeLessThanOrEqual(bound);
    }
    expect(mirrors[1]!.policy.net.optimizer.state.step).toBe(2);
    expect(maxAbsDiff(mirrors[1]!.policy.net.params, policy.net.params)).toBeGreaterThan(1e-3); // they moved
  });

  it('reports a rank that dies as an error naming the trainer', () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: OPTIM, rng: new Rng(1) });
    const dying = start([...TWO, '--fail-at-step', '1', '--fail-rank', '1']);
    dying.init({ policy, critic: null });
    const seqs = randomSequences({ rng: new Rng(2), lengths: [4, 5], cfg });
    dying.policy.forward(seqs, { train: true });
    dying.policy.backward({ logprobs: seqs.map((s) => new Float32Array(s.length).fill(0.5)) });
    let err: unknown = null;
    try {
      dying.policy.step();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TorchTrainerError);
    process.stderr.write(`torch rank lost: ${(err as Error).message}\n`);
    expect((err as Error).message).toMatch(
      /^the torch trainer \(\/usr\/bin\/python3 -m crl_torch\.torchrun .* -m crl_torch .*\) exited with code \d+ during step: crl_torch: rank [01] /,
    );
  });
});
