/** Global L2 norm over a flat gradient buffer (float64 accumulation). */
export function gradNorm(grads: Float32Array): number {
  let s = 0;
  for (let i = 0; i < grads.length; i++) s += grads[i]! * grads[i]!;
  return Math.sqrt(s);
}

/**
 * Scales grads in place so their global norm is at most maxNorm (0 = no clipping).
 * Returns the norm before clipping (what gets logged).
 */
export function clipGradNorm(grads: Float32Array, maxNorm: number): number {
  const norm = gradNorm(grads);
  if (maxNorm > 0 && norm > maxNorm) {
    const k = maxNorm / (norm + 1e-6);
    for (let i = 0; i < grads.length; i++) grads[i] = grads[i]! * k;
  }
  return norm;
}
