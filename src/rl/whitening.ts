/**
 * Whitening as a choice (docs/credit.md). Method §4 whitens once over the whole batch's optimized
 * tokens. With the cross-trajectory correction, early segments' advantages are scaled towards 0
 * first, and batch statistics then turn them into a near-uniform push of about -mean/std
 * (docs/results/table4-log.md). Whitening within groups of comparable segments keeps each group's
 * spread instead:
 *
 * - 'none': advantages as the estimator gave them.
 * - 'batch': one mean and std over every optimized token of the batch (method §4, the default).
 * - 'per-kind': execution tokens and summary tokens whitened separately.
 * - 'per-position': segments grouped by how many segments follow them in their episode (0 = the
 *   last segment), the quantity the correction's N_after grows with and the axis of
 *   bench/credit-by-position.ts; position is counted from the end, because counting from the start
 *   would pool a one-window episode's only segment with the first window of a long episode.
 *
 * Each group is whitened with maskedWhiten (Bessel-corrected; a group of one token gives 0).
 */
import { RlInputError } from './errors.ts';
import { maskedWhiten } from './whiten.ts';

export type WhiteningMode = 'none' | 'batch' | 'per-kind' | 'per-position';

export interface WhitenSegment {
  kind: 'execution' | 'summary';
  segmentsAfter?: number; // segments after this one in its episode; needed by 'per-position'
}

type GroupKey = ((segment: WhitenSegment, index: number) => string) | null;

const GROUPS: Readonly<Record<WhiteningMode, GroupKey>> = {
  none: null,
  batch: () => 'all',
  'per-kind': (seg) => seg.kind,
  'per-position': (seg, s) => {
    if (seg.segmentsAfter === undefined)
      throw new RlInputError(`whitening 'per-position' needs segments[${s}].segmentsAfter`);
    return String(seg.segmentsAfter);
  },
};

export const WHITENING_MODES = Object.keys(GROUPS) as WhiteningMode[];

/** ppo.whitenAdvantages as a mode: true is 'batch' (method §4), false is 'none'. */
export function whiteningMode(setting: boolean | string): WhiteningMode {
  if (setting === true) return 'batch';
  if (setting === false) return 'none';
  if (!Object.hasOwn(GROUPS, setting))
    throw new RlInputError(`unknown whitening '${setting}'; valid: true, false, ${WHITENING_MODES.join(', ')}`);
  return setting as WhiteningMode;
}

/** Whitens each group of segments over its masked tokens. // [T] per segment */
export function whitenAdvantages(options: {
  values: Float32Array[]; // [T] per segment
  masks: Uint8Array[]; // [T] per segment: the optimized tokens M
  segments: readonly WhitenSegment[];
  mode: WhiteningMode;
}): Float32Array[] {
  const { values, masks, segments } = options;
  const key = GROUPS[whiteningMode(options.mode)];
  if (key === null) return values;
  if (segments.length !== values.length)
    throw new RlInputError(`whitenAdvantages: ${values.length} arrays but ${segments.length} segments`);
  const groups = new Map<string, number[]>();
  segments.forEach((seg, s) => {
    const k = key(seg, s);
    groups.set(k, [...(groups.get(k) ?? []), s]);
  });
  const out = new Array<Float32Array>(values.length);
  for (const members of groups.values()) {
    const w = maskedWhiten({ values: members.map((s) => values[s]!), masks: members.map((s) => masks[s]!) });
    members.forEach((s, i) => (out[s] = w[i]!));
  }
  return out;
}
