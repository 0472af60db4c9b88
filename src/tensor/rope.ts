import { nativeOps } from './native-ops.ts';
import type { RopeTable, RopeArgs } from './op-args.ts';

/**
 * Rotary position embeddings, Hugging Face Llama "rotate_half" layout: inside each head of size D,
 * element i pairs with element i + D/2 and both rotate by angle pos * theta^(-2i/D). Using HF's
 * layout (not interleaved pairs) keeps exported checkpoints loadable by LlamaForCausalLM as-is.
 * N = rows, H = heads, D = head dim, P = max positions.
 */
/**
 * RoPE frequency scaling (Hugging Face `rope_scaling`, as llama.cpp implements it):
 * - linear: positions divided by `factor`;
 * - llama3: each frequency divided by a factor between 1 and `factor` chosen by its wavelength
 *   against `originalMaxPositions` (transformers' _compute_llama3_parameters, llama.cpp's rope_freqs);
 * - yarn: frequencies blended between interpolated (/ factor) and original by a linear ramp over
 *   the dims whose rotations fall between `betaFast` and `betaSlow` turns in `originalMaxPositions`,
 *   and cos/sin scaled by 1 + 0.1 ln(factor) (transformers' _compute_yarn_parameters with its
 *   defaults; llama.cpp's rope_yarn).
 */
export type RopeScaling =
  | { type: 'linear'; factor: number }
  | { type: 'llama3'; factor: number; lowFreqFactor: number; highFreqFactor: number; originalMaxPositions: number }
  | { type: 'yarn'; factor: number; originalMaxPositions: number; betaFast: number; betaSlow: number };

/** Per-pair angular frequencies [D/2] and the cos/sin magnitude under a scaling. */
export function ropeFrequencies({
  headDim,
  theta,
  scaling,
}: {
  headDim: number;
  theta: number;
  scaling?: RopeScaling | null | undefined;
}): { freqs: Float64Array; magnitude: number } {
  const half = headDim / 2;
  const freqs = Float64Array.from({ length: half }, (_, i) => Math.pow(theta, (-2 * i) / headDim));
  if (!scaling) return { freqs, magnitude: 1 };
  if (scaling.type === 'linear') return { freqs: freqs.map((f) => f / scaling.factor), magnitude: 1 };
  if (scaling.type === 'llama3') {
    const { factor, lowFreqFactor, highFreqFactor, originalMaxPositions: old } = scaling;
    const lowWavelen = old / lowFreqFactor;
    const highWavelen = old / highFreqFactor;
    return {
      freqs: freqs.map((f) => {
        const wavelen = (2 * Math.PI) / f;
        if (wavelen < highWavelen) return f;
        if (wavelen > lowWavelen) return f / factor;
        const smooth = (old / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
        return (1 - smooth) * (f / factor) + smooth * f;
      }),
      magnitude: 1,
    };
  }
  const { factor, originalMaxPositions: old, betaFast, betaSlow } = scaling;
  // The dim whose frequency turns `rotations` times over the original context.
  const corrDim = (rotations: number) => (headDim * Math.log(old / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
  const low = Math.max(0, Math.floor(corrDim(betaFast)));
  const high = Math.min(headDim - 1, Math.ceil(corrDim(betaSlow)));
  return {
    freqs: freqs.map((f, i) => {
      const ramp = 1 - Math.min(1, Math.max(0, (i - low) / Math.max(0.001, high - low))); // 1 = keep f
      return (f / factor) * (1 - ramp) + f * ramp;
    }),
    magnitude: factor <= 1 ? 1 : 1 + 0.1 * Math.log(factor),
  };
}

export function ropeTable({
  maxPositions,
  headDim,
  theta,
  scaling,
}: {
  maxPositions: number;
  headDim: number;
  theta: number;
  scaling?: RopeScaling | null | undefined;
}): RopeTable {
  if (headDim % 2 !== 0) throw new Error(`rope: head dim must be even, got ${headDim}`);
  const half = headDim / 2;
  const { freqs, magnitude: m } = ropeFrequencies({ headDim, theta, scaling });
  const cos = new Float32Array(maxPositions * half);
  const sin = new Float32Array(maxPositions * half);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      const ang = p * freqs[i]!;
      cos[p * half + i] = m * Math.cos(ang);
      sin[p * half + i] = m * Math.sin(ang);
    }
  }
  return { cos, sin, half, maxPositions };
}

/** The TypeScript body: fallback and the native twin's oracle (which computes in double too, so bit-identical). */
export function ropeRotateTs(a: RopeArgs, sign: number): void {
  const { x, n, nHeads, rowStride, offset, positions, table } = a;
  const half = table.half;
  const d = 2 * half;
  for (let r = 0; r < n; r++) {
    const t = positions[r]! * half;
    const base = offset + r * rowStride;
    for (let h = 0; h < nHeads; h++) {
      const o = base + h * d;
      for (let i = 0; i < half; i++) {
        const c = table.cos[t + i]!;
        const s = sign * table.sin[t + i]!;
        const x1 = x[o + i]!;
        const x2 = x[o + half + i]!;
        x[o + i] = x1 * c - x2 * s;
        x[o + half + i] = x2 * c + x1 * s;
      }
    }
  }
}

/** Rotates in place. */
export function ropeForward(a: RopeArgs): void {
  if (nativeOps) nativeOps.ropeRotate(a, 1);
  else ropeRotateTs(a, 1);
}

/**
 * The rotation is m·R with R orthogonal (m = 1 unless yarn scales it), so the input gradient
 * m·R^T·dout is the same table applied with the sine negated, in place.
 */
export function ropeBackward(a: RopeArgs): void {
  if (nativeOps) nativeOps.ropeRotate(a, -1);
  else ropeRotateTs(a, -1);
}
