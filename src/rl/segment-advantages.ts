/**
 * Segment advantages and critic returns for one episode (method §4).
 *
 * Each segment is a separate sequence. Only its generated positions p_1 < … < p_n (loss mask 1)
 * are GAE steps; observation, template and context positions are transparent (skipped, their
 * values never read). Local GAE ends every segment with the episode reward R at p_n and
 * V(p_{n+1}) = 0 (no bootstrap across a compaction boundary). The policy advantage is then scaled
 * by (gamma * lambda_s)^N_after(s), where N_after(s) counts generated tokens in all later segments
 * of the episode (whether or not those segments are trained on). Critic returns use lambdaCritic
 * and are never scaled.
 *
 * Numbers are accumulated in float64 and stored as float32.
 */
import { RlInputError, requireBinaryMask, requireFinite, requireInRange, requireSameLength } from './errors.ts';

export interface SegmentAdvantageInput {
  kind: 'execution' | 'summary';
  values: Float32Array; // [T] critic value for the state in which token t is generated
  lossMask: Uint8Array; // [T] 1 where the policy generated token t, else 0
}

/** Policy lambda: a fixed number in [0, 1], or length-adaptive lambda_s = 1 - 1/(alpha * n_s) (method §4). */
export type LambdaSpec = number | { lengthAdaptiveAlpha: number };

export interface SegmentAdvantageOptions {
  segments: SegmentAdvantageInput[]; // one episode, in time order
  reward: number; // the episode's reward, shared by every segment
  /**
   * The reward each segment's local GAE ends with, [S]; absent = R for every segment (method §4).
   * segment-rewards.ts computes the alternatives (R / K, gamma^(K-k) R; docs/credit.md).
   */
  segmentRewards?: ArrayLike<number>;
  gamma: number;
  lambda: LambdaSpec;
  lambdaCritic: number;
  crossTrajectory: boolean;
}

export interface SegmentAdvantageOutput {
  advantages: Float32Array[]; // [T] per segment; 0 where lossMask is 0
  returns: Float32Array[]; // [T] per segment; 0 where lossMask is 0
}

/**
 * lambda_s for a segment with n generated tokens. The adaptive formula is applied literally, so
 * alpha * n <= 1 gives lambda_s <= 0 (e.g. alpha = 1, n = 1 -> 0). n = 0 returns 0: such a segment
 * has no advantage to compute or scale, so its lambda is never used (and 1 - 1/0 would be -Infinity).
 */
export function segmentLambda(lambda: LambdaSpec, n: number): number {
  if (typeof lambda === 'number') return lambda;
  if (n === 0) return 0;
  return 1 - 1 / (lambda.lengthAdaptiveAlpha * n);
}

/** Indices t with mask[t] = 1, ascending. */
export function generatedPositions(mask: Uint8Array): Int32Array {
  let n = 0;
  for (let t = 0; t < mask.length; t++) n += mask[t]!;
  const out = new Int32Array(n);
  for (let t = 0, j = 0; t < mask.length; t++) if (mask[t] === 1) out[j++] = t;
  return out;
}

/**
 * Local GAE over the generated positions of one segment (method §4):
 * delta_j = r_j + gamma V(p_{j+1}) - V(p_j), r_n = R, V(p_{n+1}) = 0,
 * A_j = delta_j + gamma lambda A_{j+1}  (the backward form of the finite sum).
 * Returns A_loc at each generated position, in order. // [n]
 */
export function localGae(options: {
  values: Float32Array; // [T]
  positions: Int32Array; // [n]
  reward: number;
  gamma: number;
  lambda: number;
}): Float64Array {
  const { values, positions, reward, gamma, lambda } = options;
  const n = positions.length;
  const out = new Float64Array(n);
  let nextValue = 0;
  let acc = 0;
  for (let j = n - 1; j >= 0; j--) {
    const v = values[positions[j]!]!;
    const r = j === n - 1 ? reward : 0;
    const delta = r + gamma * nextValue - v;
    acc = delta + gamma * lambda * acc;
    out[j] = acc;
    nextValue = v;
  }
  return out;
}

function validate(options: SegmentAdvantageOptions): void {
  const { segments, reward, gamma, lambda, lambdaCritic, crossTrajectory } = options;
  if (!Array.isArray(segments)) throw new RlInputError('segments must be an array of segments');
  requireFinite(reward, 'reward');
  requireInRange({ value: gamma, lo: 0, hi: 1, what: 'gamma' });
  requireInRange({ value: lambdaCritic, lo: 0, hi: 1, what: 'lambdaCritic' });
  if (typeof crossTrajectory !== 'boolean') throw new RlInputError('crossTrajectory must be true or false');
  if (typeof lambda === 'number') {
    requireInRange({ value: lambda, lo: 0, hi: 1, what: 'lambda' });
  } else if (lambda !== null && typeof lambda === 'object' && 'lengthAdaptiveAlpha' in lambda) {
    const alpha = lambda.lengthAdaptiveAlpha;
    requireFinite(alpha, 'lambda.lengthAdaptiveAlpha');
    if (!(alpha > 0)) throw new RlInputError(`lambda.lengthAdaptiveAlpha must be > 0, got ${alpha}`);
  } else {
    throw new RlInputError('lambda must be a number in [0, 1] or { lengthAdaptiveAlpha: number }');
  }
  if (options.segmentRewards !== undefined) {
    if (options.segmentRewards.length !== segments.length)
      throw new RlInputError(
        `segmentRewards has ${options.segmentRewards.length} entries for ${segments.length} segments`,
      );
    for (let s = 0; s < segments.length; s++) requireFinite(options.segmentRewards[s]!, `segmentRewards[${s}]`);
  }
  segments.forEach((seg, s) => {
    if (seg.kind !== 'execution' && seg.kind !== 'summary') {
      throw new RlInputError(`segments[${s}].kind must be 'execution' or 'summary', got ${String(seg.kind)}`);
    }
    requireSameLength({ a: seg.values, b: seg.lossMask, what: `segments[${s}] values vs lossMask` });
    requireBinaryMask(seg.lossMask, `segments[${s}].lossMask`);
    // Only generated positions are read; values elsewhere are transparent (method §4), so they are not checked.
    for (let t = 0; t < seg.values.length; t++) {
      if (seg.lossMask[t] === 1) requireFinite(seg.values[t]!, `segments[${s}].values[${t}]`);
    }
  });
}

/** Advantages and critic returns for one episode's segments (method §4). No whitening here. */
export function computeSegmentAdvantages(options: SegmentAdvantageOptions): SegmentAdvantageOutput {
  validate(options);
  const { segments, reward, gamma, lambda, lambdaCritic, crossTrajectory } = options;
  const positions = segments.map((seg) => generatedPositions(seg.lossMask));
  // nAfter[s] = generated tokens in segments s+1.. (method §4: N_after counts every later segment).
  const nAfter = new Array<number>(segments.length).fill(0);
  for (let s = segments.length - 2; s >= 0; s--) nAfter[s] = nAfter[s + 1]! + positions[s + 1]!.length;

  const advantages: Float32Array[] = [];
  const returns: Float32Array[] = [];
  segments.forEach((seg, s) => {
    const pos = positions[s]!;
    const lambdaS = segmentLambda(lambda, pos.length);
    const adv = new Float32Array(seg.values.length);
    const ret = new Float32Array(seg.values.length);
    if (pos.length > 0) {
      const r = options.segmentRewards?.[s] ?? reward;
      const aLoc = localGae({ values: seg.values, positions: pos, reward: r, gamma, lambda: lambdaS });
      const aCritic = localGae({ values: seg.values, positions: pos, reward: r, gamma, lambda: lambdaCritic });
      // 0^0 = 1 in JS, so the last segment (N_after = 0) is never discounted, even with lambda_s = 0.
      const factor = crossTrajectory ? Math.pow(gamma * lambdaS, nAfter[s]!) : 1;
      for (let j = 0; j < pos.length; j++) {
        const a = factor * aLoc[j]!;
        const g = aCritic[j]! + seg.values[pos[j]!]!;
        if (!Number.isFinite(a) || !Number.isFinite(g)) {
          throw new RlInputError(
            `segments[${s}]: advantage overflow (lambda_s = ${lambdaS} from n_s = ${pos.length}; ` +
              `|gamma * lambda_s| > 1 grows without bound — use lengthAdaptiveAlpha >= 0.5 or a fixed lambda)`,
          );
        }
        adv[pos[j]!] = a;
        ret[pos[j]!] = g;
      }
    }
    advantages.push(adv);
    returns.push(ret);
  });
  return { advantages, returns };
}
