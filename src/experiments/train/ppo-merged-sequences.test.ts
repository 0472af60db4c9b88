import { describe, expect, it } from 'vitest';
import { CriticModel } from '../../model/network/critic.ts';
import { modelConfig } from '../../model/network/config.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../../model/network/test-helpers.ts';
import { ppoUpdate, type PpoSegment } from '../../rl/ppo-update.ts';
import { recomputeOld } from '../../rl/recompute-old.ts';
import { Rng } from '../../util/random.ts';

/**
 * PPO on merged sequences (rl/shared-prefix.ts) with the real transformer: an execution segment
 * and the summary segment that repeats its window, run as one sequence, give the old log-probs,
 * values, losses and gradients of running them separately.
 */
const cfg = modelConfig('tiny', { maxSeqLen: 96 });

function models() {
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 2);
  const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM });
  critic.net.params.set([0.4], critic.net.params.length - 1); // a non-zero value head
  critic.net.w.score!.set(Array.from({ length: cfg.dModel }, (_, i) => Math.sin(i)));
  return { policy, critic };
}

/** Two episodes: exec_1, sum_1, exec_2 (final) and exec_1, sum_1, exec_2, sum_2, exec_3; masks as a rollout records them. */
function segments(): { kind: 'execution' | 'summary'; tokens: Int32Array; lossMask: Uint8Array }[] {
  const rng = new Rng(5);
  const out: { kind: 'execution' | 'summary'; tokens: Int32Array; lossMask: Uint8Array }[] = [];
  for (const windows of [2, 3]) {
    for (let w = 0; w < windows; w++) {
      const [exec, summary] = randomSequences({ rng, lengths: [40 + 7 * w, 9], cfg });
      out.push({
        kind: 'execution',
        tokens: exec!,
        lossMask: Uint8Array.from(exec!, (_, t) => +(t >= 10 && t % 3 !== 0)),
      });
      if (w === windows - 1) break;
      const tokens = Int32Array.from([...exec!, ...summary!]);
      out.push({ kind: 'summary', tokens, lossMask: Uint8Array.from(tokens, (_, t) => +(t >= exec!.length + 2)) });
    }
  }
  return out;
}

function run(mergePrefixes: boolean) {
  const { policy, critic } = models();
  const raw = segments();
  const old = recomputeOld({ segments: raw, policy, critic, batchTokens: 120, mergePrefixes });
  const batch: PpoSegment[] = raw.map((s, i) => ({
    ...s,
    oldLogprobs: old.oldLogprobs[i]!,
    oldValues: old.oldValues![i]!,
    advantages: Float32Array.from(s.tokens, (_, t) => Math.sin(i + 0.3 * t)),
    returns: Float32Array.from(s.tokens, (_, t) => Math.cos(i - 0.2 * t)),
  }));
  // The gradients each optimizer step sees, captured before the step applies them.
  const grads: { policy: Float32Array[]; critic: Float32Array[] } = { policy: [], critic: [] };
  const capture = (net: PolicyModel['net'], into: Float32Array[]) => {
    const step = net.step.bind(net);
    net.step = () => {
      into.push(net.grads.slice());
      return step();
    };
  };
  capture(policy.net, grads.policy);
  capture(critic.net, grads.critic);
  const metrics = ppoUpdate({
    segments: batch,
    policy,
    critic,
    // One minibatch, so both runs see the same segments in every step; 2 epochs: the second step
    // starts from weights the first moved, so the old log-probs are no longer the current ones.
    config: { epochs: 2, minibatchTokens: 10_000, criticWarmupIterations: 0, mergePrefixes, valueClip: 0.5 },
    iteration: 1,
    rng: new Rng(7),
  });
  return { old, grads, metrics };
}

function relDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / m;
}

describe('PPO on merged execution + summary sequences, real transformer', () => {
  it('old log-probs and values, losses and every step gradient equal the separate computation', () => {
    const merged = run(true);
    const separate = run(false);
    let fwd = 0;
    merged.old.oldLogprobs.forEach((lp, s) => {
      for (let t = 0; t < lp.length; t++) {
        fwd = Math.max(fwd, Math.abs(lp[t]! - separate.old.oldLogprobs[s]![t]!));
        fwd = Math.max(fwd, Math.abs(merged.old.oldValues![s]![t]! - separate.old.oldValues![s]![t]!));
      }
    });
    // Causal attention and batch-invariant kernels: the shared prefix's outputs are the same numbers.
    expect(fwd).toBeLessThan(1e-6);
    expect(merged.grads.policy.length).toBe(2);
    expect(merged.grads.critic.length).toBe(4);
    let worst = 0;
    for (const who of ['policy', 'critic'] as const) {
      merged.grads[who].forEach((g, k) => (worst = Math.max(worst, relDiff(g, separate.grads[who][k]!))));
    }
    console.log(
      `merged vs separate: forward max diff ${fwd.toExponential(2)}, gradient max rel diff ${worst.toExponential(2)}`,
    );
    // Only the order of float additions differs (a prefix row's gradient is one sum, not two).
    expect(worst).toBeLessThan(1e-5);
    for (const k of ['loss/policy', 'loss/value', 'policy/entropy', 'policy/approx_kl', 'policy/clipfrac'])
      expect(Math.abs(merged.metrics[k]! - separate.metrics[k]!)).toBeLessThan(1e-6);
    expect(merged.metrics['tokens/summary']).toBe(separate.metrics['tokens/summary']);
  });
});
