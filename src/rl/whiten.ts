/**
 * Masked advantage whitening over a batch (method §4, "Whitening": over the batch's optimized
 * tokens, on by default). Statistics come from the masked tokens of every segment
 * together, not per segment, so the token-level weighting of §5 is kept.
 *
 * out = (x - mean) / sqrt(var + WHITEN_EPS), var with Bessel's correction (divide by N - 1, as
 * verl's masked_whiten). N = 1 gives var = 0 and out = 0; N = 0 returns all zeros. Positions outside
 * the mask are 0 in the output.
 */
import { RlInputError, requireSameLength } from './errors.ts';

export const WHITEN_EPS = 1e-8;

export function maskedWhiten(options: {
  values: Float32Array[]; // [T] per segment
  masks: Uint8Array[]; // [T] per segment
}): Float32Array[] {
  const { values, masks } = options;
  if (values.length !== masks.length)
    throw new RlInputError(`maskedWhiten: ${values.length} arrays but ${masks.length} masks`);
  values.forEach((v, s) => requireSameLength({ a: v, b: masks[s]!, what: `maskedWhiten segment ${s} values vs mask` }));
  let n = 0;
  let sum = 0;
  values.forEach((v, s) => {
    for (let t = 0; t < v.length; t++)
      if (masks[s]![t] === 1) {
        n++;
        sum += v[t]!;
      }
  });
  const mean = n > 0 ? sum / n : 0;
  let sq = 0;
  values.forEach((v, s) => {
    for (let t = 0; t < v.length; t++) if (masks[s]![t] === 1) sq += (v[t]! - mean) ** 2;
  });
  const variance = n > 1 ? sq / (n - 1) : 0;
  const scale = 1 / Math.sqrt(variance + WHITEN_EPS);
  return values.map((v, s) => {
    const out = new Float32Array(v.length);
    for (let t = 0; t < v.length; t++) if (masks[s]![t] === 1) out[t] = (v[t]! - mean) * scale;
    return out;
  });
}
