/**
 * One PPO iteration's update over a batch of segments (method §5–6), reading top to bottom:
 * optimized-token masks -> whitening -> E epochs x minibatches (policy step, then critic steps) -> metrics.
 *
 * The policy loss runs over M = generated tokens of execution segments, plus summary segments when
 * trainSummaries is on, aggregated with the configured mode. The critic trains on every generated
 * token (summaries included), token-mean (method §5: "token-level mean over generated positions").
 * Iterations are counted from 1, as in the training loop, metrics and checkpoints: iterations
 * 1 .. criticWarmupIterations train only the critic; without a critic there is nothing to warm up
 * and the policy trains from iteration 1.
 *
 * With mergePrefixes (default), an execution segment and the summary segment that repeats its
 * window run as one sequence in every forward and backward (shared-prefix.ts); the pair is one
 * unit of the minibatch split, counted by its segments' tokens, so it never straddles two
 * minibatches. Losses, masks, advantages and aggregation stay per segment.
 */
import type { Rng } from '../util/random.ts';
import type { TrainableCritic, TrainablePolicy } from '../contracts/index.ts';
import { RlInputError, requireBinaryMask, requireSameLength } from './errors.ts';
import { aggregateLoss, aggregationWeights } from './aggregate-loss.ts';
import { policyLoss } from './policy-loss.ts';
import { valueLoss } from './value-loss.ts';
import { policyAdvantages } from './policy-advantages.ts';
import { buildMinibatches } from './minibatches.ts';
import { offPolicyOf, parsePpoConfig, type PpoConfig, type PpoConfigInput } from './ppo-config.ts';
import { importanceStats, importanceWeights } from './off-policy.ts';
import { explainedVariance, maskedCount, maskedMean } from './masked-stats.ts';
import { mergedBatch, prefixGroups, segmentTokens, toMembers, toSequences, type MergedBatch } from './shared-prefix.ts';

export interface PpoSegment {
  kind: 'execution' | 'summary';
  tokens: Int32Array; // [T]
  lossMask: Uint8Array; // [T] 1 on generated tokens
  oldLogprobs: Float32Array; // [T] trainer-recomputed (method §6), position convention of trainable.ts
  oldValues: Float32Array; // [T] critic values before this update
  advantages: Float32Array; // [T] from an advantage estimator (not yet whitened)
  returns: Float32Array; // [T] critic targets
  episode?: number; // the episode in the batch; needed by ppo.segmentWeights 'inverse-count'
  segmentsAfter?: number; // segments after it in its episode; needed by whitening 'per-position'
  behaviourLogprobs?: Float32Array; // [T] the sampler's log-probs, NaN where unknown; read by ppo.offPolicy
}

export type PpoMetrics = Record<string, number>;

const METRIC_KEYS = [
  'loss/policy',
  'loss/value',
  'policy/entropy',
  'policy/clipfrac',
  'policy/approx_kl',
  'value/explained_variance',
  'optim/grad_norm',
  'optim/critic_grad_norm',
  'tokens/execution',
  'tokens/summary',
  'train/policy_updated',
  'train/policy_steps',
  'train/critic_steps',
  'train/kl_stopped',
] as const;

/** The policy loss mask: summary tokens leave M when trainSummaries is off (method §5). */
export function policyMask(segment: Pick<PpoSegment, 'kind' | 'lossMask'>, trainSummaries: boolean): Uint8Array {
  return segment.kind === 'summary' && !trainSummaries ? new Uint8Array(segment.lossMask.length) : segment.lossMask;
}

function validateSegments(segments: PpoSegment[]): void {
  segments.forEach((seg, s) => {
    if (seg.kind !== 'execution' && seg.kind !== 'summary')
      throw new RlInputError(`segments[${s}].kind must be 'execution' or 'summary'`);
    requireBinaryMask(seg.lossMask, `segments[${s}].lossMask`);
    for (const key of ['lossMask', 'oldLogprobs', 'oldValues', 'advantages', 'returns'] as const) {
      requireSameLength({ a: seg[key], b: seg.tokens, what: `segments[${s}] ${key} vs tokens` });
    }
  });
}

class MeanAccumulator {
  private sums = new Map<string, { sum: number; n: number }>();
  add(key: string, value: number): void {
    const e = this.sums.get(key) ?? { sum: 0, n: 0 };
    e.sum += value;
    e.n += 1;
    this.sums.set(key, e);
  }
  mean(key: string): number {
    const e = this.sums.get(key);
    return e ? e.sum / e.n : 0;
  }
  count(key: string): number {
    return this.sums.get(key)?.n ?? 0;
  }
}

function policyStep(options: {
  policy: TrainablePolicy;
  batch: MergedBatch;
  masks: Uint8Array[];
  oldLogprobs: Float32Array[];
  behaviourLogprobs: Float32Array[];
  advantages: Float32Array[];
  config: PpoConfig;
  acc: MeanAccumulator;
}): boolean {
  const { policy, batch, masks, config, acc } = options;
  const fwd = policy.forward(batch.sequences, { train: true });
  const logprobs = toMembers({ perSequence: fwd.logprobs, batch });
  const entropies = toMembers({ perSequence: fwd.entropies, batch });
  const terms = policyLoss({
    logprobs,
    oldLogprobs: options.oldLogprobs,
    advantages: options.advantages,
    entropies,
    masks,
    clipLow: config.clipLow,
    clipHigh: config.clipHigh,
    klCoef: config.klCoef,
    entropyCoef: config.entropyCoef,
    behaviourLogprobs: options.behaviourLogprobs,
    offPolicy: offPolicyOf(config),
  });
  const approxKl = maskedMean({ values: terms.approxKl, masks });
  // targetKl: the policy already moved too far from the one that sampled; no step (a train forward may go without its backward).
  if (config.targetKl !== null && approxKl > 1.5 * config.targetKl) return false;
  const mode = config.lossAggregation;
  const weights = aggregationWeights({ masks, mode });
  const scale = (g: Float32Array[]): Float32Array[] => g.map((x, s) => x.map((v, t) => v * weights[s]![t]!));
  policy.backward({
    logprobs: toSequences({ perMember: scale(terms.gradLogprobs), batch }),
    ...(config.entropyCoef !== 0 ? { entropies: toSequences({ perMember: scale(terms.gradEntropies), batch }) } : {}),
  });
  const { gradNorm } = policy.step();
  acc.add('loss/policy', aggregateLoss({ perToken: terms.perToken, masks, mode }));
  acc.add('policy/entropy', maskedMean({ values: entropies, masks }));
  acc.add('policy/clipfrac', maskedMean({ values: terms.clipped, masks }));
  acc.add('policy/approx_kl', approxKl);
  acc.add('optim/grad_norm', gradNorm);
  return true;
}

function criticStep(options: {
  critic: TrainableCritic;
  batch: MergedBatch;
  masks: Uint8Array[];
  oldValues: Float32Array[];
  returns: Float32Array[];
  config: PpoConfig;
  acc: MeanAccumulator;
}): void {
  const { critic, batch, masks, config, acc } = options;
  const values = toMembers({ perSequence: critic.forward(batch.sequences, { train: true }).values, batch });
  const terms = valueLoss({
    values,
    oldValues: options.oldValues,
    returns: options.returns,
    masks,
    valueClip: config.valueClip,
  });
  const weights = aggregationWeights({ masks, mode: 'token-mean' });
  const grads = terms.gradValues.map((x, s) => x.map((v, t) => v * weights[s]![t]!));
  critic.backward({ values: toSequences({ perMember: grads, batch }) });
  const { gradNorm } = critic.step();
  acc.add('loss/value', aggregateLoss({ perToken: terms.perToken, masks, mode: 'token-mean' }));
  acc.add('optim/critic_grad_norm', gradNorm);
}

/** Runs the update for one iteration and returns `group/name` metrics (means over optimizer steps). */
export function ppoUpdate(options: {
  segments: PpoSegment[];
  policy: TrainablePolicy;
  critic?: TrainableCritic; // optional for critic-free estimators
  config: PpoConfigInput; // parsed again with ppoConfigSchema at run time (unknown keys rejected)
  iteration: number; // 1-based: the training loop's iteration
  rng: Rng; // minibatch shuffling
  rewards?: readonly number[]; // the batch's episode rewards; needed by ppo.uniformRewards 'skip-policy'
}): PpoMetrics {
  const { segments, policy, critic, iteration, rng, rewards } = options;
  const config = parsePpoConfig(options.config);
  if (!Number.isInteger(iteration) || iteration < 1)
    throw new RlInputError(`iteration counts from 1 (the training loop's iteration), got ${iteration}`);
  validateSegments(segments);
  const skipUniform = config.uniformRewards === 'skip-policy';
  let uniform = false;
  if (skipUniform) {
    if (rewards === undefined)
      throw new RlInputError("ppo.uniformRewards 'skip-policy' needs the batch's episode rewards");
    uniform = rewards.length > 0 && rewards.every((r) => r === rewards[0]);
  }

  const trainPolicy = (!critic || iteration > config.criticWarmupIterations) && !uniform;
  const pMasks = segments.map((seg) => policyMask(seg, config.trainSummaries));
  const cMasks = segments.map((seg) => seg.lossMask);
  // Whitening statistics come from M, the tokens the policy loss actually sees (method §4).
  const advantages = policyAdvantages({
    segments,
    advantages: segments.map((seg) => seg.advantages),
    masks: pMasks,
    whiten: config.whitenAdvantages,
    ...(config.segmentWeights ? { segmentWeights: config.segmentWeights } : {}),
  });

  // The sampler's log-probs (NaN where unknown), for an off-policy correction (off-policy.ts).
  const behaviour = segments.map(
    (seg) => seg.behaviourLogprobs ?? new Float32Array(seg.tokens.length).fill(Number.NaN),
  );
  behaviour.forEach((b, s) =>
    requireSameLength({ a: b, b: segments[s]!.tokens, what: `segments[${s}] behaviourLogprobs vs tokens` }),
  );
  const offPolicy = offPolicyOf(config);

  const acc = new MeanAccumulator();
  const tokens = segments.map((seg) => seg.tokens);
  const groups = prefixGroups({ tokens, merge: config.mergePrefixes });
  const lengths = segmentTokens({ groups, tokens });
  let klStopped = false;
  for (let epoch = 0; epoch < config.epochs; epoch++) {
    for (const mb of buildMinibatches({ lengths, tokenBudget: config.minibatchTokens, rng })) {
      const batch = mergedBatch({ groups: mb.map((g) => groups[g]!), tokens });
      const pick = <T>(xs: T[]): T[] => batch.segments.map((i) => xs[i]!);
      const masks = pick(pMasks);
      if (trainPolicy && !klStopped && maskedCount(masks) > 0) {
        klStopped = !policyStep({
          policy,
          batch,
          masks,
          oldLogprobs: batch.segments.map((i) => segments[i]!.oldLogprobs),
          behaviourLogprobs: batch.segments.map((i) => behaviour[i]!),
          advantages: pick(advantages),
          config,
          acc,
        });
      }
      const critMasks = pick(cMasks);
      if (critic && maskedCount(critMasks) > 0) {
        for (let k = 0; k < config.criticUpdatesPerPolicyUpdate; k++) {
          criticStep({
            critic,
            batch,
            masks: critMasks,
            oldValues: batch.segments.map((i) => segments[i]!.oldValues),
            returns: batch.segments.map((i) => segments[i]!.returns),
            config,
            acc,
          });
        }
      }
    }
  }

  const count = (kind: PpoSegment['kind']): number =>
    trainPolicy ? maskedCount(pMasks.filter((_, s) => segments[s]!.kind === kind)) : 0;
  const metrics: PpoMetrics = {
    'loss/policy': acc.mean('loss/policy'),
    'loss/value': acc.mean('loss/value'),
    'policy/entropy': acc.mean('policy/entropy'),
    'policy/clipfrac': acc.mean('policy/clipfrac'),
    'policy/approx_kl': acc.mean('policy/approx_kl'),
    'value/explained_variance': explainedVariance({
      predictions: segments.map((s) => s.oldValues),
      targets: segments.map((s) => s.returns),
      masks: cMasks,
    }),
    'optim/grad_norm': acc.mean('optim/grad_norm'),
    'optim/critic_grad_norm': acc.mean('optim/critic_grad_norm'),
    'tokens/execution': count('execution'),
    'tokens/summary': count('summary'),
    'train/policy_updated': trainPolicy ? 1 : 0,
    'train/policy_steps': acc.count('optim/grad_norm'),
    'train/critic_steps': acc.count('optim/critic_grad_norm'),
    'train/kl_stopped': klStopped ? 1 : 0,
  };
  const keyed: PpoMetrics = Object.fromEntries(METRIC_KEYS.map((k) => [k, metrics[k]!]));
  // Only runs that can skip report it, so the metrics of every other run keep their keys.
  const out: PpoMetrics = skipUniform ? { ...keyed, 'train/uniform_skipped': uniform ? 1 : 0 } : keyed;
  if (offPolicy.correction === 'none') return out;
  // exp(logp_old - logp_b) over the batch's optimized tokens: fixed for the iteration, so measured once.
  const iw = importanceStats(
    importanceWeights({
      oldLogprobs: segments.map((s) => s.oldLogprobs),
      behaviourLogprobs: behaviour,
      masks: pMasks,
      offPolicy,
    }),
  );
  return { ...out, 'off_policy/iw_mean': iw.mean, 'off_policy/iw_max': iw.max, 'off_policy/iw_capped': iw.cappedShare };
}
