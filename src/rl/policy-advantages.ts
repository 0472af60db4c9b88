/**
 * The advantages the policy loss uses (method §4–5, docs/credit.md): the estimator's advantages,
 * whitened by the chosen mode (whitening.ts), then times each segment's loss weight
 * (segment-weights.ts). ppoUpdate and the saved credit samples both call this, so what the viewer
 * and bench/credit-by-position.ts report as "used" is what the loss saw.
 */
import { RlInputError } from './errors.ts';
import { segmentLossWeights, type SegmentWeighting } from './segment-weights.ts';
import { whitenAdvantages, whiteningMode, type WhitenSegment } from './whitening.ts';

export interface CreditSegment extends WhitenSegment {
  episode?: number; // the episode it belongs to; needed by segment weights other than 'uniform'
}

export function policyAdvantages(options: {
  segments: readonly CreditSegment[];
  advantages: Float32Array[]; // [T] per segment, from the estimator
  masks: Uint8Array[]; // [T] per segment: the optimized tokens M
  whiten: boolean | string; // ppo.whitenAdvantages
  segmentWeights?: SegmentWeighting; // absent: 'uniform'
}): Float32Array[] {
  const { segments, masks } = options;
  const whitened = whitenAdvantages({
    values: options.advantages,
    masks,
    segments,
    mode: whiteningMode(options.whiten),
  });
  const mode = options.segmentWeights ?? 'uniform';
  if (mode === 'uniform') return whitened;
  const episode = Int32Array.from(segments, (s, i) => {
    if (s.episode === undefined) throw new RlInputError(`segment weights '${mode}' need segments[${i}].episode`);
    return s.episode;
  });
  const inLoss = Uint8Array.from(masks, (m) => (m.some((x) => x === 1) ? 1 : 0));
  const w = segmentLossWeights({ episode, inLoss, mode });
  return whitened.map((a, s) => a.map((x) => x * w[s]!));
}
