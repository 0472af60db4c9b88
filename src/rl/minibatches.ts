/**
 * Minibatches by token budget, from whole segments (method §6: "split by tokens, whole segments").
 * A segment is never split: splitting would cut the policy's context. A segment longer than the
 * budget forms a minibatch on its own.
 */
import type { Rng } from '../util/random.ts';
import { RlInputError } from './errors.ts';

/** Greedy packing in the given order: a new minibatch starts when the next segment would overflow. */
export function packByTokens(options: {
  lengths: readonly number[];
  tokenBudget: number;
  order?: readonly number[];
}): number[][] {
  const { lengths, tokenBudget } = options;
  if (!Number.isInteger(tokenBudget) || tokenBudget < 1)
    throw new RlInputError(`tokenBudget must be a positive integer, got ${tokenBudget}`);
  const order = options.order ?? lengths.map((_, i) => i);
  const batches: number[][] = [];
  let current: number[] = [];
  let used = 0;
  for (const i of order) {
    const len = lengths[i];
    if (len === undefined) throw new RlInputError(`packByTokens: index ${i} out of range (${lengths.length} segments)`);
    if (current.length > 0 && used + len > tokenBudget) {
      batches.push(current);
      current = [];
      used = 0;
    }
    current.push(i);
    used += len;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** Shuffles segment order with the seeded rng, then packs by token budget. Indices into the batch. */
export function buildMinibatches(options: { lengths: readonly number[]; tokenBudget: number; rng: Rng }): number[][] {
  const order = options.rng.shuffle(options.lengths.map((_, i) => i));
  return packByTokens({ lengths: options.lengths, tokenBudget: options.tokenBudget, order });
}
