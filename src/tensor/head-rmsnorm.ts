/**
 * RMSNorm over each query and key head (Qwen3's q_norm / k_norm, applied before RoPE), in place
 * inside packed q | k | v rows. Each head of D values is normalized on its own (rmsnorm.ts's
 * formula with C = D); all query heads share qWeight and all key heads kWeight; v passes through.
 * N = rows, H = query heads, Hkv = key/value heads, D = head size, W = (H + 2 Hkv) D.
 * Backward ADDS into dinp and the weight gradients. TypeScript only: these loops are O(N W), small
 * next to the projections around them.
 */
export interface HeadRmsnormForwardArgs {
  out: Float32Array; // [N, W] (may be inp: in place)
  rstd: Float32Array; // [N, H + Hkv] saved for backward
  inp: Float32Array; // [N, W]
  qWeight: Float32Array; // [D]
  kWeight: Float32Array; // [D]
  n: number;
  h: number;
  hkv: number;
  d: number;
  eps: number;
}

export function headRmsnormForward(a: HeadRmsnormForwardArgs): void {
  const { out, rstd, inp, qWeight, kWeight, n, h, hkv, d, eps } = a;
  const w = (h + 2 * hkv) * d;
  const normed = h + hkv;
  for (let r = 0; r < n; r++) {
    for (let k = 0; k < normed; k++) {
      const o = r * w + k * d;
      const weight = k < h ? qWeight : kWeight;
      let ss = 0;
      for (let i = 0; i < d; i++) ss += inp[o + i]! * inp[o + i]!;
      const s = 1 / Math.sqrt(ss / d + eps);
      rstd[r * normed + k] = s;
      for (let i = 0; i < d; i++) out[o + i] = inp[o + i]! * s * weight[i]!;
    }
    if (out !== inp) for (let i = normed * d; i < w; i++) out[r * w + i] = inp[r * w + i]!;
  }
}

export interface HeadRmsnormBackwardArgs {
  dinp: Float32Array; // [N, W] accumulated
  dqWeight: Float32Array; // [D] accumulated
  dkWeight: Float32Array; // [D] accumulated
  dout: Float32Array; // [N, W]
  inp: Float32Array; // [N, W] the forward's input
  qWeight: Float32Array;
  kWeight: Float32Array;
  rstd: Float32Array; // [N, H + Hkv]
  n: number;
  h: number;
  hkv: number;
  d: number;
}

export function headRmsnormBackward(a: HeadRmsnormBackwardArgs): void {
  const { dinp, dqWeight, dkWeight, dout, inp, qWeight, kWeight, rstd, n, h, hkv, d } = a;
  const w = (h + 2 * hkv) * d;
  const normed = h + hkv;
  for (let r = 0; r < n; r++) {
    for (let k = 0; k < normed; k++) {
      const o = r * w + k * d;
      const weight = k < h ? qWeight : kWeight;
      const dweight = k < h ? dqWeight : dkWeight;
      const s = rstd[r * normed + k]!;
      // dx_i = s w_i dy_i - s^3 / D * x_i * sum_j dy_j w_j x_j  (as rmsnorm.ts)
      let dot = 0;
      for (let i = 0; i < d; i++) dot += dout[o + i]! * weight[i]! * inp[o + i]!;
      const c = (s * s * s * dot) / d;
      for (let i = 0; i < d; i++) {
        const dy = dout[o + i]!;
        const x = inp[o + i]!;
        dinp[o + i]! += s * weight[i]! * dy - c * x;
        dweight[i]! += dy * x * s;
      }
    }
    for (let i = normed * d; i < w; i++) dinp[r * w + i]! += dout[r * w + i]!;
  }
}
