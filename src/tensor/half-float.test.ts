import { getFloat16, setFloat16 } from '@petamoriken/float16';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import {
  bf16ToF16,
  bf16ToF32,
  countNonFinite,
  countNonFiniteHalf,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
} from './half-float.ts';

/** The reference: @petamoriken/float16's per-value conversion (round to nearest even). */
function referenceF16(src: Float32Array): Uint16Array {
  const out = new Uint16Array(src.length);
  const view = new DataView(out.buffer);
  for (let i = 0; i < src.length; i++) setFloat16(view, 2 * i, src[i]!, true);
  return out;
}

/** Float32 values with the given bit patterns. */
function fromBits(bits: Uint32Array): Float32Array {
  return new Float32Array(bits.buffer);
}

function isNanF16(h: number): boolean {
  return (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
}

describe('half-float conversions', () => {
  it('f32ToF16 agrees bit for bit with the reference on every bf16 value and 200,000 random floats', () => {
    const rng = new Rng(7);
    const bits = new Uint32Array(65536 + 200_000);
    for (let h = 0; h < 65536; h++) bits[h] = h << 16;
    // Random patterns, and patterns near the f16 subnormal / normal / overflow edges with random low bits.
    const edges = [0x33000000, 0x33800000, 0x38800000, 0x387fe000, 0x477fe000, 0x477ff000, 0x47800000];
    for (let i = 65536; i < bits.length; i++) {
      const r = Math.floor(rng.next() * 2 ** 32) >>> 0;
      bits[i] = i % 2 === 0 ? r : (edges[i % edges.length]! + (r & 0x1fff) - 0x1000) ^ (r & 0x80000000);
    }
    const src = fromBits(bits);
    const got = f32ToF16(src);
    const want = referenceF16(src);
    const mismatches: number[] = [];
    for (let i = 0; i < src.length; i++)
      if (isNanF16(want[i]!) ? !isNanF16(got[i]!) : got[i] !== want[i]) mismatches.push(bits[i]!);
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('f16ToF32 is exact and f32ToF16 inverts it on every non-NaN half', () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const wide = f16ToF32(all);
    const view = new DataView(all.buffer);
    const wrong: number[] = [];
    for (let h = 0; h < 65536; h++) {
      const v = getFloat16(view, 2 * h, true);
      if (Number.isNaN(v) ? !Number.isNaN(wide[h]!) : !Object.is(wide[h], v)) wrong.push(h);
    }
    expect(wrong).toEqual([]);
    const back = f32ToF16(wide);
    expect(all.filter((h) => !isNanF16(h) && back[h] !== h).length).toBe(0);
  });

  it('bf16 widens exactly and narrows to nearest even', () => {
    const src = new Float32Array([1, -2.5, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -9, 1e38, NaN, -Infinity]);
    const b = f32ToBf16(src);
    // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even (1) wins; 1 + 3·2^-8 goes up to 1 + 2^-6.
    expect(Array.from(bf16ToF32(b).subarray(0, 5))).toEqual([1, -2.5, 1, 1 + 2 ** -6, 1]);
    expect(Math.abs(bf16ToF32(b)[5]! / 1e38 - 1)).toBeLessThan(2 ** -8);
    expect(bf16ToF32(f32ToBf16(new Float32Array([3.4e38])))[0]).toBe(Infinity); // past bf16's largest finite value
    expect(Number.isNaN(bf16ToF32(b)[6]!)).toBe(true);
    expect(bf16ToF32(b)[7]).toBe(-Infinity);
  });

  it('bf16 widens every bit pattern the same, two at a time or one (aligned, unaligned, odd lengths)', () => {
    const all = Uint16Array.from({ length: 65536 + 3 }, (_, i) => i & 0xffff);
    const one = (h: number) => new Uint32Array(new Float32Array([bf16ToF32(Uint16Array.of(h))[0]!]).buffer)[0];
    for (const [from, to] of [
      [0, all.length],
      [1, all.length],
      [2, 65537],
    ] as const) {
      const part = all.subarray(from, to);
      const bits = new Uint32Array(bf16ToF32(part).buffer);
      let wrong = 0;
      for (let i = 0; i < part.length; i++)
        if (bits[i] !== (part[i]! << 16) >>> 0 || (i < 9 && bits[i] !== one(part[i]!))) wrong++;
      expect(wrong).toBe(0);
    }
  });

  it('bf16ToF16 equals widening to f32 and rounding to f16, on every bf16 pattern', () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const direct = bf16ToF16(all);
    const twoStep = f32ToF16(bf16ToF32(all));
    expect(all.filter((h) => direct[h] !== twoStep[h]).length).toBe(0);
  });

  it('counts NaN and infinities, and nothing else', () => {
    expect(countNonFinite(new Float32Array([0, -0, 3.4e38, 1e-45]))).toBe(0);
    expect(countNonFinite(new Float32Array([NaN, Infinity, 1, -Infinity]))).toBe(3);
    const f16 = new Uint16Array([0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x3c00]); // max, +inf, -inf, NaN, 1
    expect(countNonFiniteHalf(f16, 'f16')).toBe(3);
    const bf16 = f32ToBf16(new Float32Array([1e38, Infinity, NaN, -2]));
    expect(countNonFiniteHalf(bf16, 'bf16')).toBe(2);
  });

  it('refuses an output shorter than the input', () => {
    expect(() => f32ToF16(new Float32Array(4), new Uint16Array(3))).toThrow(/out holds 3 values, src 4/);
  });
});
