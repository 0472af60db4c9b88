/**
 * Rotary position embeddings, Hugging Face Llama "rotate_half" layout: inside each head of size D,
 * element i pairs with element i + D/2 and both rotate by angle pos * theta^(-2i/D). Using HF's
 * layout (not interleaved pairs) keeps exported checkpoints loadable by LlamaForCausalLM as-is.
 * N = rows, H = heads, D = head dim, P = max positions.
 */
export interface RopeTable {
  cos: Float32Array; // [P, D/2]
  sin: Float32Array; // [P, D/2]
  half: number; // D/2
  maxPositions: number;
}

export function ropeTable({
  maxPositions,
  headDim,
  theta,
}: {
  maxPositions: number;
  headDim: number;
  theta: number;
}): RopeTable {
  if (headDim % 2 !== 0) throw new Error(`rope: head dim must be even, got ${headDim}`);
  const half = headDim / 2;
  const cos = new Float32Array(maxPositions * half);
  const sin = new Float32Array(maxPositions * half);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      const ang = p * Math.pow(theta, (-2 * i) / headDim);
      cos[p * half + i] = Math.cos(ang);
      sin[p * half + i] = Math.sin(ang);
    }
  }
  return { cos, sin, half, maxPositions };
}

export interface RopeArgs {
  x: Float32Array; // rows of [H, D] at x[offset + r * rowStride]
  n: number;
  nHeads: number;
  rowStride: number;
  offset: number;
  positions: Int32Array; // [N] absolute position of each row
  table: RopeTable;
}

function rotate(a: RopeArgs, sign: number): void {
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
  rotate(a, 1);
}

/** The rotation is orthogonal, so the input gradient is the inverse rotation of dout, in place. */
export function ropeBackward(a: RopeArgs): void {
  rotate(a, -1);
}
