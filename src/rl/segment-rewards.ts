/**
 * How the episode reward R is handed to the segments of method §4's local GAE (docs/credit.md).
 * Method §4 gives every segment the whole R ('shared'). Two alternatives that users of other
 * frameworks propose for context-managed agents:
 *
 * - 'split' (slime's suggestion): each of the K segments gets R / K, so the rewards of an episode
 *   sum to R however many times it compacted.
 * - 'discounted' (ROLL #409): segment k of K (1-based, time order) gets gamma_seg^(K - k) * R, the
 *   return a per-segment discount would give it: the last segment R, earlier ones less.
 *
 * K counts the segments that generated at least one token; a segment that generated nothing has no
 * GAE step and gets 0. Registered by name (house style §6); an unknown name throws the valid ones.
 */
import { RlInputError, requireInRange } from './errors.ts';

export type SegmentRewardMode = 'shared' | 'split' | 'discounted';

type RewardRule = (options: { reward: number; k: number; K: number; discount: number }) => number;

const RULES: Readonly<Record<SegmentRewardMode, RewardRule>> = {
  shared: ({ reward }) => reward,
  split: ({ reward, K }) => reward / K,
  discounted: ({ reward, k, K, discount }) => Math.pow(discount, K - k) * reward,
};

export const SEGMENT_REWARD_MODES = Object.keys(RULES) as SegmentRewardMode[];

/** The default per-segment discount of 'discounted' when none is given. */
export const DEFAULT_SEGMENT_DISCOUNT = 0.9;

/** Per-segment terminal rewards of one episode. // [S] */
export function segmentRewards(options: {
  reward: number;
  generated: readonly number[]; // [S] generated tokens per segment, time order
  mode: string;
  discount?: number; // gamma_seg of 'discounted'
}): Float64Array {
  const { reward, generated, mode } = options;
  if (!Object.hasOwn(RULES, mode))
    throw new RlInputError(`unknown segment reward '${mode}'; valid: ${SEGMENT_REWARD_MODES.join(', ')}`);
  const discount = options.discount ?? DEFAULT_SEGMENT_DISCOUNT;
  requireInRange({ value: discount, lo: 0, hi: 1, what: 'segment reward discount' });
  const rule = RULES[mode as SegmentRewardMode];
  const K = generated.filter((n) => n > 0).length;
  const out = new Float64Array(generated.length);
  let k = 0;
  generated.forEach((n, s) => {
    if (n === 0) return;
    k++;
    out[s] = rule({ reward, k, K, discount });
  });
  return out;
}
