/**
 * Row order of the q_proj and k_proj weights under the two RoPE layouts.
 *
 * Hugging Face Llama (and this engine, tensor/rope.ts) rotates element i of a head with element
 * i + D/2 ("rotate half"); llama.cpp's `llama` architecture rotates adjacent pairs (2i, 2i + 1).
 * Exporting a Llama checkpoint to GGUF therefore reorders each head's rows so that row i + s·D/2
 * lands at 2i + s (convert_hf_to_gguf.py's `permute`); importing reverses it. Architectures that
 * llama.cpp runs with NEOX-style RoPE (qwen3) keep the Hugging Face order.
 * H = heads, D = head dim, C = input features.
 */
export interface RopeRowsArgs {
  w: Float32Array; // [H * D, C]
  heads: number;
  headDim: number;
  cols: number;
}

function permute({ w, heads, headDim, cols }: RopeRowsArgs, toInterleaved: boolean): Float32Array {
  if (headDim % 2 !== 0) throw new Error(`rope rows: head dim must be even, got ${headDim}`);
  if (w.length !== heads * headDim * cols)
    throw new Error(`rope rows: ${w.length} values do not form [${heads} * ${headDim}, ${cols}]`);
  const half = headDim / 2;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) {
    for (let s = 0; s < 2; s++) {
      for (let i = 0; i < half; i++) {
        const halfRow = h * headDim + s * half + i; // rotate-half order
        const pairRow = h * headDim + 2 * i + s; // interleaved order
        const [src, dst] = toInterleaved ? [halfRow, pairRow] : [pairRow, halfRow];
        out.set(w.subarray(src * cols, (src + 1) * cols), dst * cols);
      }
    }
  }
  return out;
}

/** Hugging Face rotate-half rows -> llama.cpp interleaved rows (a new array). */
export function toInterleavedRopeRows(args: RopeRowsArgs): Float32Array {
  return permute(args, true);
}

/** llama.cpp interleaved rows -> Hugging Face rotate-half rows (a new array). */
export function toRotateHalfRopeRows(args: RopeRowsArgs): Float32Array {
  return permute(args, false);
}
