/**
 * SwiGLU: out = silu(gate) * up, where each input row holds [gate (F) | up (F)] because the model
 * stores gate_proj and up_proj adjacently and computes both with one GEMM.
 * N = rows, F = MLP hidden size. Backward ADDS into dinp. The forward saves sigmoid(gate) so the
 * backward needs no exp (exp is most of this op's cost).
 */
import { nativeOps } from './native-ops.ts';
import type { SwigluForwardArgs, SwigluBackwardArgs } from './op-args.ts';

/** Dispatches to the native twin when the addon is loaded (native-ops.ts); swigluForwardTs otherwise. */
export function swigluForward(args: SwigluForwardArgs): void {
  if (nativeOps) nativeOps.swigluForward(args);
  else swigluForwardTs(args);
}

export function swigluForwardTs({ out, sig, inp, n, f }: SwigluForwardArgs): void {
  for (let r = 0; r < n; r++) {
    const oi = r * 2 * f;
    const oo = r * f;
    for (let i = 0; i < f; i++) {
      const g = inp[oi + i]!;
      const sg = 1 / (1 + Math.exp(-g));
      sig[oo + i] = sg;
      out[oo + i] = g * sg * inp[oi + f + i]!;
    }
  }
}

/** Dispatches to the native twin when the addon is loaded (native-ops.ts); swigluBackwardTs otherwise. */
export function swigluBackward(args: SwigluBackwardArgs): void {
  if (nativeOps) nativeOps.swigluBackward(args);
  else swigluBackwardTs(args);
}

export function swigluBackwardTs({ dinp, dout, inp, sig, n, f }: SwigluBackwardArgs): void {
  for (let r = 0; r < n; r++) {
    const oi = r * 2 * f;
    const oo = r * f;
    for (let i = 0; i < f; i++) {
      const g = inp[oi + i]!;
      const u = inp[oi + f + i]!;
      const dy = dout[oo + i]!;
      const s = sig[oo + i]!;
      dinp[oi + i]! += dy * u * s * (1 + g * (1 - s));
      dinp[oi + f + i]! += dy * g * s;
    }
  }
}
