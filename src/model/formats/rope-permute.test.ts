import { describe, expect, it } from 'vitest';
import { toInterleavedRopeRows, toRotateHalfRopeRows } from './rope-permute.ts';

describe('RoPE row order', () => {
  it('moves rotate-half row s·D/2 + i of each head to interleaved row 2i + s, and back', () => {
    const heads = 2;
    const headDim = 4;
    const cols = 3;
    // Row r holds r in every column.
    const w = Float32Array.from({ length: heads * headDim * cols }, (_, k) => Math.floor(k / cols));
    const inter = toInterleavedRopeRows({ w, heads, headDim, cols });
    const rows = Array.from({ length: heads * headDim }, (_, r) => inter[r * cols]);
    // head 0: [x0, x2, x1, x3]: the pairs (0, 2) and (1, 3) become adjacent, as llama.cpp rotates them.
    expect(rows).toEqual([0, 2, 1, 3, 4, 6, 5, 7]);
    expect(Array.from(toRotateHalfRopeRows({ w: inter, heads, headDim, cols }))).toEqual(Array.from(w));
  });

  it('rejects a matrix that is not [heads * headDim, cols]', () => {
    expect(() => toInterleavedRopeRows({ w: new Float32Array(10), heads: 2, headDim: 4, cols: 3 })).toThrow(
      /do not form/,
    );
  });
});
