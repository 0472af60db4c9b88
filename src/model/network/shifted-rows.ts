/**
 * Per-row values of a packed batch (pack.ts) and the per-sequence arrays of trainable.ts, whose
 * index t is the value predicted before token t: row start + t - 1, and 0 at t = 0.
 */
import type { PackedBatch } from './pack.ts';

/** Splits a packed per-row array into the trainable.ts position convention: out[t] = row[start + t - 1], out[0] = 0. */
export function unpackShifted(rows: Float32Array, batch: PackedBatch): Float32Array[] {
  const { starts, lengths } = batch.layout;
  const out: Float32Array[] = [];
  for (let s = 0; s < starts.length; s++) {
    const l = lengths[s]!;
    const a = new Float32Array(l);
    if (l > 1) a.set(rows.subarray(starts[s], starts[s]! + l - 1), 1);
    out.push(a);
  }
  return out;
}

/** The inverse: per-sequence gradients (index t) into packed rows (row start + t - 1). */
export function packShifted({
  rows,
  grads,
  batch,
  what,
}: {
  rows: Float32Array;
  grads: readonly Float32Array[];
  batch: PackedBatch;
  what: string;
}): void {
  const { starts, lengths } = batch.layout;
  if (grads.length !== starts.length)
    throw new Error(`backward: got ${grads.length} ${what} gradient arrays for ${starts.length} sequences`);
  rows.fill(0, 0, batch.n);
  for (let s = 0; s < starts.length; s++) {
    const l = lengths[s]!;
    const gr = grads[s]!;
    if (gr.length !== l)
      throw new Error(`backward: ${what} gradient ${s} has length ${gr.length}, its sequence has ${l} tokens`);
    if (l > 1) rows.set(gr.subarray(1, l), starts[s]);
  }
}
