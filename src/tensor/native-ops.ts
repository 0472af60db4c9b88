/**
 * Native twins of the non-GEMM ops, with the same signatures as their TypeScript originals
 * (swiglu.ts, softmax.ts). `nativeOps` is null when the addon is unavailable, so an op's
 * dispatch is one line at the top of its TypeScript function:
 *
 *   if (nativeOps) return nativeOps.swigluForward(args);
 *
 * Why native: after GEMM moved to C++, bench:engine's per-kernel breakdown put SwiGLU and the
 * attention softmax (both exp-bound) at ~60% of a training step; the C++ versions vectorize exp.
 */
import { nativeAddon, type NativeAddon } from './native.ts';
import type { CausalSoftmaxArgs, CausalSoftmaxBackwardArgs } from './softmax.ts';
import type { SwigluBackwardArgs, SwigluForwardArgs } from './swiglu.ts';

export interface NativeOps {
  swigluForward(a: SwigluForwardArgs): void;
  swigluBackward(a: SwigluBackwardArgs): void;
  causalSoftmaxForward(a: CausalSoftmaxArgs): void;
  causalSoftmaxBackward(a: CausalSoftmaxBackwardArgs): void;
}

function bind(addon: NativeAddon): NativeOps {
  return {
    swigluForward: ({ out, sig, inp, n, f }) => addon.swigluForward(out, sig, inp, n, f),
    swigluBackward: ({ dinp, dout, inp, sig, n, f }) => addon.swigluBackward(dinp, dout, inp, sig, n, f),
    causalSoftmaxForward: ({ x, offset, blocks, l }) => addon.causalSoftmaxForward(x, offset, blocks, l),
    causalSoftmaxBackward: ({ grad, gradOffset, probs, probsOffset, blocks, l }) =>
      addon.causalSoftmaxBackward(grad, gradOffset, probs, probsOffset, blocks, l),
  };
}

export const nativeOps: NativeOps | null = nativeAddon ? bind(nativeAddon) : null;
