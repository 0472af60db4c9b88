/**
 * RMSNorm (Llama): out = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps).
 * N = rows (packed tokens), C = channels. Backward ADDS into dinp and dweight (llm.c convention:
 * the residual stream's gradient arrives already in dinp).
 */
import { nativeOps } from './native-ops.ts';
import type { RmsnormForwardArgs, RmsnormBackwardArgs } from './op-args.ts';

/** Dispatches to the native twin when the addon is loaded (native-ops.ts); rmsnormForwardTs otherwise. */
export function rmsnormForward(args: RmsnormForwardArgs): void {
  if (nativeOps) nativeOps.rmsnormForward(args);
  else rmsnormForwardTs(args);
}

export function rmsnormForwardTs({ out, rstd, inp, weight, n, c, eps }: RmsnormForwardArgs): void {
  for (let r = 0; r < n; r++) {
    const o = r * c;
    let ss = 0;
    for (let i = 0; i < c; i++) {
      const v = inp[o + i]!;
      ss += v * v;
    }
    const s = 1 / Math.sqrt(ss / c + eps);
    rstd[r] = s;
    for (let i = 0; i < c; i++) out[o + i] = inp[o + i]! * s * weight[i]!;
  }
}

/** Dispatches to the native twin when the addon is loaded (native-ops.ts); rmsnormBackwardTs otherwise. */
export function rmsnormBackward(args: RmsnormBackwardArgs): void {
  if (nativeOps) nativeOps.rmsnormBackward(args);
  else rmsnormBackwardTs(args);
}

export function rmsnormBackwardTs({ dinp, dweight, dout, inp, weight, rstd, n, c }: RmsnormBackwardArgs): void {
  for (let r = 0; r < n; r++) {
    const o = r * c;
    const s = rstd[r]!;
    // dx_i = s * w_i * dy_i - s^3 / C * x_i * sum_j dy_j w_j x_j
    let dot = 0;
    for (let i = 0; i < c; i++) dot += dout[o + i]! * weight[i]! * inp[o + i]!;
    const k = (s * s * s * dot) / c;
    for (let i = 0; i < c; i++) {
      const dy = dout[o + i]!;
      const x = inp[o + i]!;
      dinp[o + i]! += s * weight[i]! * dy - k * x;
      dweight[i]! += dy * x * s;
    }
  }
}
