import { describe, expect, it } from 'vitest';
import { ppoUpdate, type PpoSegment } from './ppo-update.ts';
import { recomputeOld } from './recompute-old.ts';
import { TabularCritic, TabularPolicy } from './testing/tabular-models.ts';
import { Rng } from '../util/random.ts';

// Vocab: 0 = start of an execution window, 3 = start of a summary (distinct contexts so the
// policy rows touched by each kind can be told apart), 1 and 2 = generated tokens.
const EXEC_CTX = 0;
const SUM_CTX = 3;

function batch(policy: TabularPolicy, critic: TabularCritic): PpoSegment[] {
  const raw = [
    { kind: 'execution' as const, tokens: [EXEC_CTX, 1], adv: 1, ret: 1 },
    { kind: 'execution' as const, tokens: [EXEC_CTX, 2], adv: -1, ret: 0 },
    { kind: 'execution' as const, tokens: [EXEC_CTX, 1], adv: 1, ret: 1 },
    { kind: 'summary' as const, tokens: [SUM_CTX, 1], adv: 1, ret: 1 },
    { kind: 'summary' as const, tokens: [SUM_CTX, 2], adv: -1, ret: 1 },
  ];
  const segs = raw.map((r) => ({ kind: r.kind, tokens: Int32Array.from(r.tokens), lossMask: Uint8Array.from([0, 1]) }));
  const old = recomputeOld({ segments: segs, policy, critic, batchTokens: 4 });
  return segs.map((s, i) => ({
    ...s,
    oldLogprobs: old.oldLogprobs[i]!,
    oldValues: old.oldValues![i]!,
    advantages: Float32Array.from([0, raw[i]!.adv]),
    returns: Float32Array.from([0, raw[i]!.ret]),
  }));
}

const models = () => ({
  policy: new TabularPolicy({ vocab: 4, lr: 0.5 }),
  critic: new TabularCritic({ vocab: 4, lr: 0.2 }),
});
const baseConfig = {
  epochs: 2,
  minibatchTokens: 4,
  criticWarmupIterations: 0,
  criticUpdatesPerPolicyUpdate: 1,
  whitenAdvantages: false,
};

describe('ppoUpdate with a tabular softmax policy (method §5-6)', () => {
  it('raises the logprob of positive-advantage tokens and lowers negative ones', () => {
    const { policy, critic } = models();
    const before = { up: policy.logprob(EXEC_CTX, 1), down: policy.logprob(EXEC_CTX, 2) };
    const m = ppoUpdate({
      segments: batch(policy, critic),
      policy,
      critic,
      config: baseConfig,
      iteration: 1,
      rng: new Rng(1),
    });
    expect(policy.logprob(EXEC_CTX, 1)).toBeGreaterThan(before.up + 0.05);
    expect(policy.logprob(EXEC_CTX, 2)).toBeLessThan(before.down - 0.05);
    expect(m['tokens/execution']).toBe(3);
    expect(m['tokens/summary']).toBe(2);
    expect(m['train/policy_updated']).toBe(1);
    expect(m['policy/clipfrac']).toBeGreaterThanOrEqual(0);
    expect(m['policy/clipfrac']).toBeLessThanOrEqual(1);
    expect(m['policy/approx_kl']).toBeGreaterThanOrEqual(0);
    expect(m['policy/entropy']).toBeGreaterThan(0);
    expect(m['optim/grad_norm']).toBeGreaterThan(0);
    for (const v of Object.values(m)) expect(Number.isNaN(v) || Number.isFinite(v)).toBe(true);
  });

  it('trainSummaries: false removes summary tokens from the policy loss only', () => {
    const { policy, critic } = models();
    const sumRowBefore = Array.from(policy.logits.slice(SUM_CTX * 4, SUM_CTX * 4 + 4));
    const m = ppoUpdate({
      segments: batch(policy, critic),
      policy,
      critic,
      config: { ...baseConfig, trainSummaries: false },
      iteration: 1,
      rng: new Rng(2),
    });
    expect(Array.from(policy.logits.slice(SUM_CTX * 4, SUM_CTX * 4 + 4))).toEqual(sumRowBefore);
    expect(policy.logprob(EXEC_CTX, 1)).toBeGreaterThan(Math.log(0.25) + 0.05);
    expect(critic.table[SUM_CTX]).toBeGreaterThan(0.05); // critic still trains on summary tokens (return 1)
    expect(m['tokens/summary']).toBe(0);
    expect(m['tokens/execution']).toBe(3);
    // With summary training on, the summary row moves.
    const b = models();
    ppoUpdate({
      segments: batch(b.policy, b.critic),
      policy: b.policy,
      critic: b.critic,
      config: baseConfig,
      iteration: 1,
      rng: new Rng(2),
    });
    expect(b.policy.logprob(SUM_CTX, 1)).toBeGreaterThan(Math.log(0.25) + 0.05);
  });

  it('during critic warm-up (iterations 1..n) only the critic trains; from n + 1 both do', () => {
    const { policy, critic } = models();
    const config = { ...baseConfig, criticWarmupIterations: 2, criticUpdatesPerPolicyUpdate: 2 };
    const logitsBefore = Array.from(policy.logits);
    const warm = ppoUpdate({ segments: batch(policy, critic), policy, critic, config, iteration: 2, rng: new Rng(3) });
    expect(Array.from(policy.logits)).toEqual(logitsBefore);
    expect(critic.table[EXEC_CTX]).not.toBe(0);
    expect(warm['train/policy_updated']).toBe(0);
    expect(warm['train/policy_steps']).toBe(0);
    expect(warm['tokens/execution']).toBe(0);
    expect(warm['train/critic_steps']).toBeGreaterThan(0);
    const after = ppoUpdate({ segments: batch(policy, critic), policy, critic, config, iteration: 3, rng: new Rng(3) });
    expect(policy.logprob(EXEC_CTX, 1)).toBeGreaterThan(Math.log(0.25) + 0.05);
    // 2 critic updates per policy update (every minibatch here has policy tokens).
    expect(after['train/critic_steps']).toBe(2 * after['train/policy_steps']!);
  });

  it('without a critic (critic-free estimator) there is no warm-up and no value loss', () => {
    const { policy, critic } = models();
    const segments = batch(policy, critic);
    const m = ppoUpdate({
      segments,
      policy,
      config: { ...baseConfig, criticWarmupIterations: 5 },
      iteration: 1,
      rng: new Rng(4),
    });
    expect(m['train/policy_updated']).toBe(1);
    expect(m['train/critic_steps']).toBe(0);
    expect(m['loss/value']).toBe(0);
  });

  it('the critic moves toward the returns and explained variance is reported from old values', () => {
    const { policy, critic } = models();
    critic.table[EXEC_CTX] = 0.5;
    const segments = batch(policy, critic);
    const m = ppoUpdate({
      segments,
      policy,
      critic,
      config: { ...baseConfig, epochs: 30, minibatchTokens: 100, criticUpdatesPerPolicyUpdate: 3, valueClip: null },
      iteration: 1,
      rng: new Rng(5),
    });
    // Exec returns 1, 0, 1 -> least-squares value 2/3; old value 0.5 everywhere in exec.
    expect(critic.table[EXEC_CTX]).toBeCloseTo(2 / 3, 3);
    // targets [1,0,1,1,1], predictions [0.5,0.5,0.5,0,0]: 1 - Var(resid)/Var(G).
    const g = [1, 0, 1, 1, 1];
    const r = [0.5, -0.5, 0.5, 1, 1];
    const v = (xs: number[]) => {
      const mu = xs.reduce((a, b) => a + b) / xs.length;
      return xs.reduce((a, x) => a + (x - mu) ** 2, 0) / xs.length;
    };
    expect(m['value/explained_variance']).toBeCloseTo(1 - v(r) / v(g), 5);
  });

  it("lossAggregation reaches the policy loss: 'token-mean' vs 'segment-mean' over one minibatch; E epochs", () => {
    const run = (lossAggregation: 'token-mean' | 'segment-mean') => {
      const { policy, critic } = models();
      const raw = [
        { tokens: [EXEC_CTX, 1, 1], adv: [0, 1, 1] }, // 2 tokens, A = +1
        { tokens: [EXEC_CTX, 2], adv: [0, -1] }, // 1 token, A = -1
      ];
      const segs = raw.map((r) => ({
        kind: 'execution' as const,
        tokens: Int32Array.from(r.tokens),
        lossMask: Uint8Array.from(r.adv, (_, t) => (t > 0 ? 1 : 0)),
      }));
      const old = recomputeOld({ segments: segs, policy, critic, batchTokens: 100 });
      const segments = segs.map((s, i) => ({
        ...s,
        oldLogprobs: old.oldLogprobs[i]!,
        oldValues: old.oldValues![i]!,
        advantages: Float32Array.from(raw[i]!.adv),
        returns: new Float32Array(s.tokens.length),
      }));
      return ppoUpdate({
        segments,
        policy,
        critic,
        config: { ...baseConfig, epochs: 1, minibatchTokens: 100, lossAggregation },
        iteration: 1,
        rng: new Rng(8),
      });
    };
    // First step has ratio 1, so loss/policy = -aggregate(A): token-mean -(1+1-1)/3, segment-mean -(1-1)/2.
    expect(run('token-mean')['loss/policy']).toBeCloseTo(-1 / 3, 6);
    expect(run('segment-mean')['loss/policy']).toBeCloseTo(0, 6);
    expect(run('token-mean')['train/policy_steps']).toBe(1);
  });

  it('segmentWeights and the whitening mode reach the policy loss (docs/credit.md)', () => {
    const run = (config: object, withPositions = true) => {
      const { policy, critic } = models();
      const raw = [
        { tokens: [EXEC_CTX, 1, 1], adv: [0, 1, 1], episode: 0, after: 1 },
        { tokens: [EXEC_CTX, 2], adv: [0, -1], episode: 0, after: 0 },
        { tokens: [EXEC_CTX, 1], adv: [0, 1], episode: 1, after: 0 },
      ];
      const segs = raw.map((r) => ({
        kind: 'execution' as const,
        tokens: Int32Array.from(r.tokens),
        lossMask: Uint8Array.from(r.adv, (_, t) => (t > 0 ? 1 : 0)),
      }));
      const old = recomputeOld({ segments: segs, policy, critic, batchTokens: 100 });
      const segments = segs.map((s, i) => ({
        ...s,
        oldLogprobs: old.oldLogprobs[i]!,
        oldValues: old.oldValues![i]!,
        advantages: Float32Array.from(raw[i]!.adv),
        returns: new Float32Array(s.tokens.length),
        episode: raw[i]!.episode,
        ...(withPositions ? { segmentsAfter: raw[i]!.after } : {}),
      }));
      return ppoUpdate({
        segments,
        policy,
        critic,
        config: { ...baseConfig, epochs: 1, minibatchTokens: 100, ...config },
        iteration: 1,
        rng: new Rng(8),
      });
    };
    // Ratio 1 on the first step: loss/policy = -mean(w A). Uniform: -(1 + 1 - 1 + 1) / 4.
    expect(run({})['loss/policy']).toBeCloseTo(-0.5, 6);
    // inverse-count: episode 0 has N = 2, episode 1 N = 1; c = 3 / 2 -> w = 0.75, 0.75, 1.5:
    // -(0.75 * 2 - 0.75 + 1.5) / 4 = -0.5625.
    expect(run({ segmentWeights: 'inverse-count' })['loss/policy']).toBeCloseTo(-0.5625, 6);
    expect(run({ whitenAdvantages: 'none' })['loss/policy']).toBeCloseTo(-0.5, 6);
    // per-position: [1, 1] (one segment after) whiten to 0, [-1, 1] (last) to -+1/sqrt2: sum 0.
    expect(run({ whitenAdvantages: 'per-position' })['loss/policy']).toBeCloseTo(0, 6);
    expect(() => run({ whitenAdvantages: 'per-position' }, false)).toThrow(/segmentsAfter/);
  });

  it('runs E epochs of minibatches', () => {
    const { policy, critic } = models();
    // 5 segments of 2 tokens, budget 4 -> 3 minibatches per epoch.
    const m = ppoUpdate({
      segments: batch(policy, critic),
      policy,
      critic,
      config: { ...baseConfig, epochs: 3 },
      iteration: 1,
      rng: new Rng(9),
    });
    expect(m['train/policy_steps']).toBe(9);
    expect(m['train/critic_steps']).toBe(9);
  });

  it('targetKl stops the policy steps once the policy left the sampler by more than 1.5 x targetKl; the critic keeps training', () => {
    const run = (targetKl: number | null) => {
      const { policy, critic } = models();
      return ppoUpdate({
        segments: batch(policy, critic),
        policy,
        critic,
        config: { ...baseConfig, epochs: 3, targetKl },
        iteration: 1,
        rng: new Rng(9),
      });
    };
    // The first step starts from the sampling policy (KL 0); after it every minibatch has KL > 0.
    const tight = run(1e-9);
    expect(tight['train/policy_steps']).toBe(1);
    expect(tight['train/kl_stopped']).toBe(1);
    expect(tight['train/critic_steps']).toBe(9);
    for (const loose of [run(1e3), run(null)]) {
      expect(loose['train/policy_steps']).toBe(9);
      expect(loose['train/kl_stopped']).toBe(0);
    }
  });

  it("uniformRewards 'skip-policy': a batch of one reward trains the critic only; whitening would blow its noise up", () => {
    const run = (config: object, rewards?: number[], scale = 1) => {
      const { policy, critic } = models();
      const segments = batch(policy, critic).map((s) => ({ ...s, advantages: s.advantages.map((a) => a * scale) }));
      const before = policy.logprob(EXEC_CTX, 1);
      const m = ppoUpdate({
        segments,
        policy,
        critic,
        config: { ...baseConfig, ...config },
        iteration: 1,
        rng: new Rng(8),
        ...(rewards ? { rewards } : {}),
      });
      return { m, moved: policy.logprob(EXEC_CTX, 1) - before, critic: critic.table[EXEC_CTX]! };
    };
    // Why: whitened, advantages of +-0.001 (a critic's error on a batch that all succeeded) move
    // the policy exactly as far as +-1 do.
    const noise = run({ whitenAdvantages: true }, undefined, 1e-3);
    const signal = run({ whitenAdvantages: true });
    expect(noise.moved).toBeGreaterThan(0.05);
    expect(noise.moved).toBeCloseTo(signal.moved, 2);
    // Skipped: the policy stays, the critic trains, and the run says so.
    const skip = { whitenAdvantages: true, uniformRewards: 'skip-policy' };
    const same = run(skip, [1, 1, 1], 1e-3);
    expect(same.moved).toBe(0);
    expect(same.critic).not.toBe(0);
    expect(same.m['train/policy_updated']).toBe(0);
    expect(same.m['train/uniform_skipped']).toBe(1);
    expect(same.m['train/critic_steps']).toBeGreaterThan(0);
    // Two rewards in the batch: the policy trains as without the option.
    const mixed = run(skip, [1, 0, 1]);
    expect(mixed.moved).toBeCloseTo(signal.moved, 6);
    expect(mixed.m['train/uniform_skipped']).toBe(0);
    // The default is the method's: no skip, and no extra metric.
    expect(signal.m['train/uniform_skipped']).toBeUndefined();
    expect(() => run(skip)).toThrow(/needs the batch's episode rewards/);
  });

  it('whitening statistics come from the optimized tokens M only', () => {
    const run = (summaryAdvantage: number): number[] => {
      const { policy, critic } = models();
      const segments = batch(policy, critic).map((seg) =>
        seg.kind === 'summary' ? { ...seg, advantages: Float32Array.from([0, summaryAdvantage]) } : seg,
      );
      ppoUpdate({
        segments,
        policy,
        critic,
        config: { ...baseConfig, whitenAdvantages: true, trainSummaries: false },
        iteration: 1,
        rng: new Rng(6),
      });
      return Array.from(policy.logits.slice(EXEC_CTX * 4, EXEC_CTX * 4 + 4));
    };
    expect(run(100)).toEqual(run(-100));
  });

  it('rejects unknown config keys and bad segments with clear messages', () => {
    const { policy, critic } = models();
    const segments = batch(policy, critic);
    expect(() =>
      ppoUpdate({ segments, policy, critic, config: { epoch: 1 } as never, iteration: 1, rng: new Rng(1) }),
    ).toThrow(/invalid PPO config/);
    expect(() =>
      ppoUpdate({
        segments,
        policy,
        critic,
        config: { lossAggregation: 'sum' } as never,
        iteration: 1,
        rng: new Rng(1),
      }),
    ).toThrow(/lossAggregation/);
    const bad = [{ ...segments[0]!, advantages: new Float32Array(3) }];
    expect(() =>
      ppoUpdate({ segments: bad, policy, critic, config: baseConfig, iteration: 1, rng: new Rng(1) }),
    ).toThrow(/advantages vs tokens/);
  });
});

describe('ppoUpdate with an off-policy correction (rl/off-policy.ts)', () => {
  const run = (options: { offPolicy?: 'tis' | 'decoupled'; behaviourShift: number }) => {
    const { policy, critic } = models();
    // The behaviour policy gave every generated token `behaviourShift` less log-prob than the trainer's old one.
    const segments = batch(policy, critic).map((s) => ({
      ...s,
      behaviourLogprobs: s.oldLogprobs.map((v) => v - options.behaviourShift),
    }));
    const m = ppoUpdate({
      segments,
      policy,
      critic,
      config: { ...baseConfig, ...(options.offPolicy ? { offPolicy: options.offPolicy } : {}) },
      iteration: 1,
      rng: new Rng(3),
    });
    return { m, logits: Array.from(policy.logits) };
  };

  it('behaviour = old (on-policy): tis and decoupled train exactly as none, weights all 1', () => {
    const none = run({ behaviourShift: 0 });
    for (const offPolicy of ['tis', 'decoupled'] as const) {
      const c = run({ offPolicy, behaviourShift: 0 });
      expect(c.logits).toEqual(none.logits);
      expect(c.m['off_policy/iw_mean']).toBe(1);
      expect(c.m['off_policy/iw_max']).toBe(1);
      expect(c.m['off_policy/iw_capped']).toBe(0);
    }
    expect(none.m['off_policy/iw_mean']).toBeUndefined(); // none adds no metrics: its lines stay as they were
  });

  it('stale tokens: tis truncates the weight at the cap, decoupled leaves them out of the step', () => {
    const shift = Math.log(3); // raw weight 3 on every token, above the default cap 2
    const tis = run({ offPolicy: 'tis', behaviourShift: shift });
    expect(tis.m['off_policy/iw_mean']).toBeCloseTo(3, 5);
    expect(tis.m['off_policy/iw_capped']).toBe(1);
    const dec = run({ offPolicy: 'decoupled', behaviourShift: shift });
    expect(dec.m['off_policy/iw_capped']).toBe(1);
    const before = models().policy.logits;
    // every token dropped: the policy rows do not move, only the critic trains
    expect(Array.from(dec.logits)).toEqual(Array.from(before));
    expect(tis.logits).not.toEqual(Array.from(before));
  });
});
