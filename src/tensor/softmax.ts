/**
 * Causal row softmax over square score blocks: row i of each [L, L] block keeps columns 0..i and
 * zeroes the rest (the causal mask). R = blocks (heads), L = sequence length.
 */
import { nativeOps } from './native-ops.ts';
import type { CausalSoftmaxArgs, CausalSoftmaxBackwardArgs } from './op-args.ts';

/** Dispatches to the native twin when the addon is loaded (native-ops.ts); causalSoftmaxForwardTs otherwise. */
export function causalSoftmaxForward(args: CausalSoftmaxArgs): void {
  if (nativeOps) nativeOps.causalSoftmaxForward(args);
  else causalSoftmaxForwardTs(args);
}

export function causalSoftmaxForwardTs({ x, offset, blocks, l }: CausalSoftmaxArgs): void {
  for (let b = 0; b < blocks; b++) {
    for (let i = 0; i < l; i++) {
      const o = offset + (b * l + i) * l;
      let mx = -Infinity;
      for (let j = 0; j <= i; j++) if (x[o + j]! > mx) mx = x[o + j]!;
      let sum = 0;
      for (let j = 0; j <= i; j++) {
        const e = Math.exp(x[o + j]! - mx);
        x[o + j] = e;
        sum += e;
      }
      const inv = 1 / sum;
      for (let j = 0; j <= i; j++) x[o + j] = x[o + j]! * inv;
      for (let j = i + 1; j < l; j++) x[o + j] = 0;
    }
  }
}

/** dS_ij = P_ij * (dP_ij - sum_k P_ik dP_ik); masked entries get 0. */
/** Dispatches to the native twin when the addon is loaded (native-ops.ts); causalSoftmaxBackwardTs otherwise. */
export function causalSoftmaxBackward(args: CausalSoftmaxBackwardArgs): void {
  if (nativeOps) nativeOps.causalSoftmaxBackward(args);
  else causalSoftmaxBackwardTs(args);
}

export function causalSoftmaxBackwardTs({
  grad,
  gradOffset,
  probs,
  probsOffset,
  blocks,
  l,
}: CausalSoftmaxBackwardArgs): void {
  for (let b = 0; b < blocks; b++) {
    for (let i = 0; i < l; i++) {
      const og = gradOffset + (b * l + i) * l;
      const op = probsOffset + (b * l + i) * l;
      let dot = 0;
      for (let j = 0; j <= i; j++) dot += probs[op + j]! * grad[og + j]!;
      for (let j = 0; j <= i; j++) grad[og + j] = probs[op + j]! * (grad[og + j]! - dot);
      for (let j = i + 1; j < l; j++) grad[og + j] = 0;
    }
  }
}
