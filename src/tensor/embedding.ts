/**
 * Token embedding lookup. N = rows, C = channels, V = vocabulary. Backward ADDS into dweight.
 */
export interface EmbeddingForwardArgs {
  out: Float32Array; // [N, C]
  tokens: Int32Array; // [N]
  weight: Float32Array; // [V, C]
  n: number;
  c: number;
}

export function embeddingForward({ out, tokens, weight, n, c }: EmbeddingForwardArgs): void {
  const v = weight.length / c;
  for (let r = 0; r < n; r++) {
    const t = tokens[r]!;
    if (t < 0 || t >= v) throw new Error(`embedding: token id ${t} outside the vocabulary [0, ${v})`);
    out.set(weight.subarray(t * c, t * c + c), r * c);
  }
}

export interface EmbeddingBackwardArgs {
  dweight: Float32Array; // [V, C] accumulated
  dout: Float32Array; // [N, C]
  tokens: Int32Array; // [N]
  n: number;
  c: number;
}

export function embeddingBackward({ dweight, dout, tokens, n, c }: EmbeddingBackwardArgs): void {
  for (let r = 0; r < n; r++) {
    const o = tokens[r]! * c;
    const od = r * c;
    for (let i = 0; i < c; i++) dweight[o + i]! += dout[od + i]!;
  }
}
