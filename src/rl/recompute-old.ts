/**
 * Old log-probs and values recomputed by the training engine (method §6, step 4: the sampler's
 * log-probs are kept to report the mismatch, and by ppo-update.ts as the behaviour log-probs of
 * the off-policy corrections). Both sides are log-probs of the sampling distribution (logits / T,
 * top-p nucleus), so they are comparable at any temperature and top-p.
 * Runs forward with train: false, in chunks of whole segments by token budget. A segment whose
 * tokens are a prefix of the next one's (exec_j before sum_j) is read off the longer one's
 * forward (shared-prefix.ts): the same numbers, computed once.
 */
import type { TrainableCritic, TrainablePolicy } from '../contracts/index.ts';
import { RlInputError, requireBinaryMask, requireSameLength } from './errors.ts';
import { packByTokens } from './minibatches.ts';
import { carrierLengths, mergedBatch, prefixGroups, toMembers } from './shared-prefix.ts';

export interface RecomputeSegment {
  tokens: Int32Array; // [T]
  lossMask: Uint8Array; // [T]
  /**
   * Sampler log-probs, either aligned with tokens ([T]) or one per generated token ([n], in order,
   * as rollout segments record them, method §3). null / NaN entries (scripted samplers) are skipped.
   */
  samplerLogprobs?: ArrayLike<number | null>;
}

export interface RecomputeResult {
  oldLogprobs: Float32Array[]; // [T] per segment
  oldEntropies: Float32Array[]; // [T] per segment, same position convention (trainable.ts)
  oldValues: Float32Array[] | null; // [T] per segment; null without a critic
  /** max |sampler - trainer| log-prob over generated tokens with a known sampler log-prob; 0 if none. */
  maxLogprobMismatch: number;
  /** mean of the same absolute differences; 0 if none. */
  meanLogprobMismatch: number;
  /** how many generated tokens had a sampler log-prob to compare. */
  comparedTokens: number;
}

/** Sampler log-prob of the generated token at position t, or null when unknown. */
function samplerAt(options: {
  sampler: ArrayLike<number | null>;
  positionIndex: number;
  t: number;
  aligned: boolean;
}): number | null {
  const v = options.aligned ? options.sampler[options.t] : options.sampler[options.positionIndex];
  return v === null || v === undefined || Number.isNaN(v) ? null : v;
}

export function recomputeOld(options: {
  segments: RecomputeSegment[];
  policy: TrainablePolicy;
  critic?: TrainableCritic;
  batchTokens: number; // forward chunk size, whole segments
  /** Run segments that share a prefix as one sequence (default true; shared-prefix.ts). */
  mergePrefixes?: boolean;
}): RecomputeResult {
  const { segments, policy, critic, batchTokens } = options;
  segments.forEach((seg, s) => {
    requireSameLength({ a: seg.lossMask, b: seg.tokens, what: `segments[${s}] lossMask vs tokens` });
    requireBinaryMask(seg.lossMask, `segments[${s}].lossMask`);
  });
  const oldLogprobs = new Array<Float32Array>(segments.length);
  const oldEntropies = new Array<Float32Array>(segments.length);
  const oldValues = critic ? new Array<Float32Array>(segments.length) : null;
  const tokens = segments.map((s) => s.tokens);
  const groups = prefixGroups({ tokens, merge: options.mergePrefixes ?? true });
  for (const chunk of packByTokens({ lengths: carrierLengths({ groups, tokens }), tokenBudget: batchTokens })) {
    const batch = mergedBatch({ groups: chunk.map((g) => groups[g]!), tokens });
    const fwd = policy.forward(batch.sequences, { train: false });
    const logprobs = toMembers({ perSequence: fwd.logprobs, batch });
    const entropies = toMembers({ perSequence: fwd.entropies, batch });
    const values = critic
      ? toMembers({ perSequence: critic.forward(batch.sequences, { train: false }).values, batch })
      : null;
    batch.segments.forEach((s, i) => {
      oldLogprobs[s] = logprobs[i]!;
      oldEntropies[s] = entropies[i]!;
      if (oldValues && values) oldValues[s] = values[i]!;
    });
  }

  let maxDiff = 0;
  let sumDiff = 0;
  let compared = 0;
  segments.forEach((seg, s) => {
    if (!seg.samplerLogprobs) return;
    const n = seg.lossMask.reduce((a, m) => a + m, 0);
    const aligned = seg.samplerLogprobs.length === seg.tokens.length;
    if (!aligned && seg.samplerLogprobs.length !== n) {
      throw new RlInputError(
        `segments[${s}].samplerLogprobs has ${seg.samplerLogprobs.length} entries; expected ${seg.tokens.length} (one per token) or ${n} (one per generated token)`,
      );
    }
    let j = 0;
    for (let t = 0; t < seg.tokens.length; t++) {
      if (seg.lossMask[t] !== 1) continue;
      const sampled = samplerAt({ sampler: seg.samplerLogprobs, positionIndex: j++, t, aligned });
      if (sampled === null) continue;
      const d = Math.abs(sampled - oldLogprobs[s]![t]!);
      maxDiff = Math.max(maxDiff, d);
      sumDiff += d;
      compared++;
    }
  });
  return {
    oldLogprobs,
    oldEntropies,
    oldValues,
    maxLogprobMismatch: maxDiff,
    meanLogprobMismatch: compared > 0 ? sumDiff / compared : 0,
    comparedTokens: compared,
  };
}
