import { createHash } from 'node:crypto';

/**
 * The identity of a base model: sha256 of its f32 weights in the network's layout (every tensor,
 * in Hugging Face order). It names the weights, not the file, so a checkpoint and the Hugging
 * Face export of it hash alike, and a base overwritten in place no longer matches the adapters
 * trained on it (peft-files.ts keeps the hash beside them).
 */
export function baseWeightsHash(params: Float32Array): string {
  const h = createHash('sha256');
  // In slices: one update() of a 0.6B model's 2.4 GB would pass Node's largest buffer.
  const step = 1 << 24;
  for (let at = 0; at < params.length; at += step) {
    const part = params.subarray(at, Math.min(params.length, at + step));
    h.update(new Uint8Array(part.buffer, part.byteOffset, part.byteLength));
  }
  return h.digest('hex');
}
