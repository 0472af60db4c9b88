/**
 * Full-trajectory GAE across compaction boundaries (docs/credit.md, "full-trajectory GAE").
 *
 * Method §4 runs GAE inside each segment and ends every segment with R and V = 0, then corrects
 * early segments by (gamma * lambda_s)^N_after. The paper calls that correction "an approximation
 * to full-trajectory credit assignment"; this is the estimate it approximates. The episode's
 * generated positions of all segments, in time order (exec_1, sum_1, exec_2, …), form one GAE
 * chain:
 *
 *   r_i     = R on the episode's last generated token, else 0
 *   delta_i = r_i + gamma * V_{i+1} - V_i,   V_{N+1} = 0
 *   A_i     = delta_i + gamma * lambda * A_{i+1}
 *
 * where V_i is the critic's value at generated position i computed on its own segment's tokens.
 * So a segment's last token bootstraps from the value at the first generated position of the next
 * segment that generated anything: after an execution segment, its summary (same window, plus the
 * summary request); after a summary, the first action of the next window, valued on that window's
 * own context (the summary and the tail steps) — the value the next window starts from. With one
 * segment this is ordinary GAE over the generated tokens, identical to method §4's local GAE.
 *
 * Length-adaptive lambda uses n = the episode's generated tokens (the chain's length). Critic
 * targets are G_i = A_i(lambdaCritic) + V_i over the same chain. Float64 inside, float32 out.
 */
import { RlInputError, requireBinaryMask, requireFinite, requireInRange, requireSameLength } from './errors.ts';
import { generatedPositions, segmentLambda, type LambdaSpec } from './segment-advantages.ts';

export interface ChainSegment {
  values: Float32Array; // [T] critic value of the state in which token t is generated
  lossMask: Uint8Array; // [T] 1 where the policy generated token t
}

/** The episode's generated positions in time order as one chain: (segment, position) pairs. */
export interface GenerationChain {
  segment: Int32Array; // [N] which segment the i-th generated token belongs to
  position: Int32Array; // [N] its index in that segment's tokens
  values: Float64Array; // [N] V_i
}

export function generationChain(segments: readonly ChainSegment[]): GenerationChain {
  const positions = segments.map((s) => generatedPositions(s.lossMask));
  const n = positions.reduce((a, p) => a + p.length, 0);
  const chain: GenerationChain = {
    segment: new Int32Array(n),
    position: new Int32Array(n),
    values: new Float64Array(n),
  };
  let i = 0;
  positions.forEach((pos, s) => {
    for (const p of pos) {
      chain.segment[i] = s;
      chain.position[i] = p;
      chain.values[i] = segments[s]!.values[p]!;
      i++;
    }
  });
  return chain;
}

/** GAE backwards over a chain of values with the reward on its last step. // [N] */
export function chainGae(options: {
  values: Float64Array;
  reward: number;
  gamma: number;
  lambda: number;
}): Float64Array {
  const { values, reward, gamma, lambda } = options;
  const n = values.length;
  const out = new Float64Array(n);
  let next = 0; // V_{N+1} = 0: the episode is over
  let acc = 0;
  for (let i = n - 1; i >= 0; i--) {
    const delta = (i === n - 1 ? reward : 0) + gamma * next - values[i]!;
    acc = delta + gamma * lambda * acc;
    out[i] = acc;
    next = values[i]!;
  }
  return out;
}

export interface FullTrajectoryOptions {
  segments: ChainSegment[]; // one episode, in time order
  reward: number;
  gamma: number;
  lambda: LambdaSpec;
  lambdaCritic: number;
}

function validate(options: FullTrajectoryOptions): void {
  const { segments, reward, gamma, lambda, lambdaCritic } = options;
  requireFinite(reward, 'reward');
  requireInRange({ value: gamma, lo: 0, hi: 1, what: 'gamma' });
  requireInRange({ value: lambdaCritic, lo: 0, hi: 1, what: 'lambdaCritic' });
  if (typeof lambda === 'number') requireInRange({ value: lambda, lo: 0, hi: 1, what: 'lambda' });
  else if (!(lambda.lengthAdaptiveAlpha > 0))
    throw new RlInputError(`lambda.lengthAdaptiveAlpha must be > 0, got ${lambda.lengthAdaptiveAlpha}`);
  segments.forEach((seg, s) => {
    requireSameLength({ a: seg.values, b: seg.lossMask, what: `segments[${s}] values vs lossMask` });
    requireBinaryMask(seg.lossMask, `segments[${s}].lossMask`);
    for (let t = 0; t < seg.values.length; t++)
      if (seg.lossMask[t] === 1) requireFinite(seg.values[t]!, `segments[${s}].values[${t}]`);
  });
}

/** Advantages and critic returns per segment, [T] each, 0 outside the loss mask. No whitening. */
export function fullTrajectoryAdvantages(options: FullTrajectoryOptions): {
  advantages: Float32Array[];
  returns: Float32Array[];
} {
  validate(options);
  const { segments, reward, gamma } = options;
  const chain = generationChain(segments);
  const lambda = segmentLambda(options.lambda, chain.values.length);
  const adv = chainGae({ values: chain.values, reward, gamma, lambda });
  const critic = chainGae({ values: chain.values, reward, gamma, lambda: options.lambdaCritic });
  const advantages = segments.map((s) => new Float32Array(s.lossMask.length));
  const returns = segments.map((s) => new Float32Array(s.lossMask.length));
  for (let i = 0; i < chain.values.length; i++) {
    const s = chain.segment[i]!;
    const p = chain.position[i]!;
    if (!Number.isFinite(adv[i]!))
      throw new RlInputError(
        `advantage overflow (lambda = ${lambda}); use lengthAdaptiveAlpha >= 0.5 or a fixed lambda`,
      );
    advantages[s]![p] = adv[i]!;
    returns[s]![p] = critic[i]! + chain.values[i]!;
  }
  return { advantages, returns };
}
