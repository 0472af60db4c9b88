/**
 * A weight W [N, K] (stored [out, in], linear.ts) packed once for x @ W^T, in the layout the native
 * GEMM packs op(B) into on every call (KC-row blocks of NR-column panels; native/src/gemm-pack.h).
 * The sampler multiplies the same weights thousands of times per iteration, a few rows at a time:
 * packing them once per weight version instead of once per call removes most of a decode step's
 * work (callgrind: packing was 58% of the large model's single-sequence decode instructions).
 * gemm() with a packed weight runs the same FMA chains, so results are bit-identical. Without the
 * native addon there is nothing to pack (null) and gemm() uses W itself.
 */
import { nativeAddon } from './native.ts';

export interface PackedWeight {
  data: Float32Array; // native panel layout of W^T
  n: number; // N = out features
  k: number; // K = in features
}

/** Packs W [N, K] (from wOffset), reusing `into` when it has the right shape; null without the addon. */
export function packWeight(o: {
  weight: Float32Array;
  n: number;
  k: number;
  into?: PackedWeight | null;
}): PackedWeight | null {
  if (!nativeAddon) return null;
  const { weight, n, k } = o;
  if (weight.length < n * k)
    throw new Error(`packWeight: weight has ${weight.length} floats, [${n}, ${k}] needs ${n * k}`);
  const size = nativeAddon.packedWeightSize(n, k);
  const data = o.into && o.into.n === n && o.into.k === k ? o.into.data : new Float32Array(size);
  nativeAddon.packWeight(weight, 0, n, k, data);
  return { data, n, k };
}
