/**
 * Per-segment policy-loss weights (docs/credit.md). Method §5's token-mean lets an episode that
 * compacted more often weigh more: it has more segments and more tokens (SkyRL's warning about
 * sequence-mean weighting episodes with more turns more). verl PR #7580 weights each segment of an
 * episode with N segments by 1/N, so every episode counts once, and renormalises the weights to
 * mean 1 because raw 1/N shrank the loss (0.26x there).
 *
 * - 'uniform': every segment 1 (method §5).
 * - 'inverse-count': w_s = c / N_e(s), N_e = the episode's segments that have a token in the
 *   policy loss; c makes the mean over those segments of the batch 1, c = S' / E' (S' segments,
 *   E' episodes with a token in the loss). Segments outside the loss get 0 (they have no loss).
 *
 * The weight multiplies the advantage after whitening. For the clipped surrogate (method §5) that
 * is the same as weighting the per-token loss: -min(rho w A, clip(rho) w A) = -w min(rho A, clip(rho) A)
 * for w >= 0. The optional KL and entropy terms stay unweighted.
 */
import { RlInputError } from './errors.ts';

export type SegmentWeighting = 'uniform' | 'inverse-count';

type WeightRule = (options: { episode: Int32Array; inLoss: Uint8Array }) => Float64Array;

const RULES: Readonly<Record<SegmentWeighting, WeightRule>> = {
  uniform: ({ inLoss }) => Float64Array.from(inLoss, () => 1),
  'inverse-count': ({ episode, inLoss }) => {
    const count = new Map<number, number>();
    episode.forEach((e, s) => {
      if (inLoss[s] === 1) count.set(e, (count.get(e) ?? 0) + 1);
    });
    const segments = inLoss.reduce((a, x) => a + x, 0);
    const c = count.size === 0 ? 0 : segments / count.size;
    return Float64Array.from(episode, (e, s) => (inLoss[s] === 1 ? c / count.get(e)! : 0));
  },
};

export const SEGMENT_WEIGHTINGS = Object.keys(RULES) as SegmentWeighting[];

/** One weight per segment of the batch. // [S] */
export function segmentLossWeights(options: {
  episode: Int32Array; // [S] the episode each segment belongs to
  inLoss: Uint8Array; // [S] 1 if the segment has a token in the policy loss M
  mode: string;
}): Float64Array {
  const { episode, inLoss, mode } = options;
  if (!Object.hasOwn(RULES, mode))
    throw new RlInputError(`unknown segment weighting '${mode}'; valid: ${SEGMENT_WEIGHTINGS.join(', ')}`);
  if (episode.length !== inLoss.length)
    throw new RlInputError(`segmentLossWeights: ${episode.length} episode ids but ${inLoss.length} inLoss flags`);
  return RULES[mode as SegmentWeighting]({ episode, inLoss });
}
