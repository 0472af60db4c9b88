/**
 * SwiGLU: out = silu(gate) * up, where each input row holds [gate (F) | up (F)] because the model
 * stores gate_proj and up_proj adjacently and computes both with one GEMM.
 * N = rows, F = MLP hidden size. Backward ADDS into dinp.
 */
export interface SwigluForwardArgs {
  out: Float32Array; // [N, F]
  inp: Float32Array; // [N, 2F]
  n: number;
  f: number;
}

export function swigluForward({ out, inp, n, f }: SwigluForwardArgs): void {
  for (let r = 0; r < n; r++) {
    const oi = r * 2 * f;
    const oo = r * f;
    for (let i = 0; i < f; i++) {
      const g = inp[oi + i]!;
      out[oo + i] = (g / (1 + Math.exp(-g))) * inp[oi + f + i]!;
    }
  }
}

export interface SwigluBackwardArgs {
  dinp: Float32Array; // [N, 2F] accumulated
  dout: Float32Array; // [N, F]
  inp: Float32Array; // [N, 2F]
  n: number;
  f: number;
}

export function swigluBackward({ dinp, dout, inp, n, f }: SwigluBackwardArgs): void {
  for (let r = 0; r < n; r++) {
    const oi = r * 2 * f;
    const oo = r * f;
    for (let i = 0; i < f; i++) {
      const g = inp[oi + i]!;
      const u = inp[oi + f + i]!;
      const dy = dout[oo + i]!;
      const s = 1 / (1 + Math.exp(-g));
      dinp[oi + i] += dy * u * s * (1 + g * (1 - s));
      dinp[oi + f + i] += dy * g * s;
    }
  }
}
