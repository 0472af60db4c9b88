import { expect } from 'vitest';
import type { CriticModel } from '../../model/network/critic.ts';
import type { PolicyModel } from '../../model/network/policy.ts';
import type { Rng } from '../../util/random.ts';
import type { TorchTrainer } from '../torch/torch-trainer.ts';
import { maxAbsDiff, maxAbsDiffs } from './max-diff.ts';

/** How far the PyTorch process may be from the embedded engine (docs/torch-trainer.md#parity-bounds). */
export interface ParityBounds {
  /** Log-probs, entropies and values, absolute. */
  outputs: number;
  /** The first step's gradient norms, relative. */
  gradNormRel: number;
  /** Later steps' gradient norms (their gradients start from weights that already differ), relative. */
  gradNormRelAfterStep: number;
  /** Weights after each step, absolute. */
  weights: number;
}

/**
 * Trains the embedded policy and critic and the trainer's side by side, one PPO-shaped step per
 * batch: a training forward, the same random gradients of the outputs, an AdamW step; after each
 * the trainer's weights and moments are pulled into `mirror`. Returns the largest difference of
 * every output, gradient norm and weight per step (`logprobs1`, `policyGradNormRel1`, ...).
 */
export function trainSideBySide(o: {
  trainer: TorchTrainer;
  policy: PolicyModel;
  critic: CriticModel;
  mirror: { policy: PolicyModel; critic: CriticModel };
  batches: readonly Int32Array[][];
  rng: Rng;
}): Record<string, number> {
  const { trainer, policy, critic, mirror, rng } = o;
  const report: Record<string, number> = {};
  const noise = (seqs: Int32Array[], scale: number) =>
    seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : scale * rng.normal())));
  o.batches.forEach((seqs, i) => {
    const stepNo = i + 1;
    const a = policy.forward(seqs, { train: true });
    const b = trainer.policy.forward(seqs, { train: true });
    report[`logprobs${stepNo}`] = maxAbsDiffs(a.logprobs, b.logprobs);
    report[`entropies${stepNo}`] = maxAbsDiffs(a.entropies, b.entropies);
    const glp = noise(seqs, 1);
    const gent = noise(seqs, 0.1);
    policy.backward({ logprobs: glp, entropies: gent });
    trainer.policy.backward({ logprobs: glp, entropies: gent });
    const sa = policy.step();
    const sb = trainer.policy.step();
    expect(sb.lr).toBe(sa.lr);
    report[`policyGradNormRel${stepNo}`] = Math.abs(sa.gradNorm - sb.gradNorm) / sa.gradNorm;
    trainer.pullInto('policy', mirror.policy.net, { optimizer: true });
    expect(mirror.policy.net.optimizer.state.step).toBe(stepNo);
    report[`policyWeights${stepNo}`] = maxAbsDiff(policy.net.params, mirror.policy.net.params);

    const va = critic.forward(seqs, { train: true }).values;
    const vb = trainer.critic.forward(seqs, { train: true }).values;
    report[`values${stepNo}`] = maxAbsDiffs(va, vb);
    const gv = noise(seqs, 1);
    critic.backward({ values: gv });
    trainer.critic.backward({ values: gv });
    const ca = critic.step();
    const cb = trainer.critic.step();
    report[`criticGradNormRel${stepNo}`] = Math.abs(ca.gradNorm - cb.gradNorm) / ca.gradNorm;
    trainer.pullInto('critic', mirror.critic.net, { optimizer: true });
    report[`criticWeights${stepNo}`] = maxAbsDiff(critic.net.params, mirror.critic.net.params);
  });
  return report;
}

/** Every entry of a trainSideBySide report (or an extra `evalValues`) within its bound. */
export function expectWithinBounds(report: Record<string, number>, bounds: ParityBounds): void {
  for (const [k, v] of Object.entries(report)) {
    const bound = /logprobs|entropies|alues/.test(k)
      ? bounds.outputs
      : k.includes('GradNorm')
        ? k.endsWith('1')
          ? bounds.gradNormRel
          : bounds.gradNormRelAfterStep
        : bounds.weights;
    expect(v, k).toBeLessThanOrEqual(bound);
  }
}
