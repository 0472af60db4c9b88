/**
 * Segments that share a prefix run as one sequence. A summary segment repeats the whole window of
 * the execution segment before it (method §3: sum_j = the window h at compaction, then q_sum, then
 * S), so exec_j's tokens are a prefix of sum_j's. Under a causal model every output at position t
 * (log-prob, entropy, value) depends only on tokens 0..t, so one forward over sum_j gives both
 * segments' outputs, and one backward with the two segments' per-token gradients added gives the
 * gradient of the sum of their losses. The losses themselves stay per segment: masks, advantages,
 * GAE and the segment-mean ablation all still see each segment on its own; only the model calls
 * are shared. SFT merges its sequences the same way (experiments/sft/sft-data.ts).
 *
 * S = segments, G = groups (sequences actually run), T = one segment's length.
 */
import { RlInputError } from './errors.ts';

/** Segments run as one sequence: `members` in batch order; the last is the longest, the carrier. */
export type SegmentGroup = readonly number[];

/**
 * Groups each run of consecutive segments whose tokens extend the previous one's (exec_j then
 * sum_j). With merge off, every segment is its own group. Any prefix relation is safe to merge
 * (causality), so grouping needs no episode or kind information.
 */
export function prefixGroups(options: { tokens: readonly Int32Array[]; merge: boolean }): SegmentGroup[] {
  const { tokens, merge } = options;
  const groups: number[][] = [];
  for (let s = 0; s < tokens.length; s++) {
    const last = groups.at(-1);
    if (merge && last && isPrefix(tokens[last.at(-1)!]!, tokens[s]!)) last.push(s);
    else groups.push([s]);
  }
  return groups;
}

function isPrefix(a: Int32Array, b: Int32Array): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The token length of each group's carrier (what a forward pass runs). */
export function carrierLengths(options: { groups: readonly SegmentGroup[]; tokens: readonly Int32Array[] }): number[] {
  return options.groups.map((g) => options.tokens[g.at(-1)!]!.length);
}

/** The summed token length of each group's segments (the data a minibatch budget counts). */
export function segmentTokens(options: { groups: readonly SegmentGroup[]; tokens: readonly Int32Array[] }): number[] {
  return options.groups.map((g) => g.reduce((a, s) => a + options.tokens[s]!.length, 0));
}

/** Some groups as model inputs: one sequence per group, and where each member segment reads. */
export interface MergedBatch {
  sequences: Int32Array[]; // [G] carrier tokens
  segments: number[]; // member segment indices, group by group
  sequenceOf: number[]; // [segments.length] the sequence each member reads
  lengths: number[]; // [segments.length] each member's own length T
}

export function mergedBatch(options: { groups: readonly SegmentGroup[]; tokens: readonly Int32Array[] }): MergedBatch {
  const out: MergedBatch = { sequences: [], segments: [], sequenceOf: [], lengths: [] };
  options.groups.forEach((g, k) => {
    out.sequences.push(options.tokens[g.at(-1)!]!);
    for (const s of g) {
      out.segments.push(s);
      out.sequenceOf.push(k);
      out.lengths.push(options.tokens[s]!.length);
    }
  });
  return out;
}

/** Per-sequence outputs -> per-member outputs (copies of each carrier's first T positions). */
export function toMembers(options: { perSequence: readonly Float32Array[]; batch: MergedBatch }): Float32Array[] {
  const { perSequence, batch } = options;
  return batch.sequenceOf.map((k, i) => perSequence[k]!.slice(0, batch.lengths[i]));
}

/** Per-member gradients -> per-sequence gradients: members of one sequence add up position by position. */
export function toSequences(options: { perMember: readonly Float32Array[]; batch: MergedBatch }): Float32Array[] {
  const { perMember, batch } = options;
  if (perMember.length !== batch.segments.length)
    throw new RlInputError(`toSequences: ${perMember.length} gradient arrays for ${batch.segments.length} segments`);
  const members = batch.sequences.map(() => 0);
  for (const k of batch.sequenceOf) members[k]!++;
  const out: (Float32Array | null)[] = batch.sequences.map(() => null);
  perMember.forEach((g, i) => {
    const k = batch.sequenceOf[i]!;
    if (g.length !== batch.lengths[i])
      throw new RlInputError(`toSequences: gradient ${i} has ${g.length} entries, its segment ${batch.lengths[i]}`);
    if (members[k] === 1) {
      out[k] = g; // a segment alone: its own gradient, as without merging
      return;
    }
    const dst = (out[k] ??= new Float32Array(batch.sequences[k]!.length));
    for (let t = 0; t < g.length; t++) dst[t]! += g[t]!;
  });
  return out.map((x) => x!);
}
