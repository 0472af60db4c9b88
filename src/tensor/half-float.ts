import { getFloat16 } from '@petamoriken/float16';

/**
 * Bulk conversions between float32 and the two 16-bit float formats weights come in: IEEE half
 * (f16: 1 sign, 5 exponent, 10 mantissa bits) and bfloat16 (bf16: the top 16 bits of a float32).
 * Every loop works on integer bit patterns through typed-array views, so hundreds of millions of
 * values convert in seconds (a 0.6B model's export); the per-value DataView helpers of
 * @petamoriken/float16 took minutes. Values are little-endian host order (callers check the host).
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** One float32 bit pattern as f16 bits, rounded to nearest, ties to even (IEEE 754 default). */
export function f32BitsToF16(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const a = x & 0x7fffffff;
  if (a >= 0x7f800000) return sign | 0x7c00 | (a > 0x7f800000 ? 0x200 | ((a >>> 13) & 0x3ff) : 0); // inf, NaN (quiet)
  if (a >= 0x477ff000) return sign | 0x7c00; // 65520 and up round to infinity
  if (a >= 0x38800000) {
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
    return sign | ((a - 0x38000000 + 0xfff + ((a >>> 13) & 1)) >>> 13);
  }
  // Subnormal or zero: the value in units of 2^-24, rounded to nearest even.
  const e = a >>> 23;
  if (e < 102) return sign; // below 2^-25: rounds to zero
  const m = (a & 0x7fffff) | 0x800000;
  const shift = 126 - e; // 14..24
  let q = m >>> shift;
  const rem = m & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rem > half || (rem === half && (q & 1) === 1)) q++;
  return sign | q;
}

/** f32 values as f16 bits [n] (rounded to nearest even; beyond ±65504 becomes ±infinity). */
export function f32ToF16(src: Float32Array, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  if (out.length < src.length) throw new Error(`f32ToF16: out holds ${out.length} values, src ${src.length}`);
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) out[i] = f32BitsToF16(bits[i]!);
  return out;
}

let f16Table: Float32Array | null = null;

/** Every f16 bit pattern's float32 value (256 KiB, built once): widening is one lookup per value. */
function f16ToF32Table(): Float32Array {
  if (!f16Table) {
    const t = new Float32Array(65536);
    const view = new DataView(new ArrayBuffer(2));
    for (let h = 0; h < 65536; h++) {
      view.setUint16(0, h, true);
      t[h] = getFloat16(view, 0, true);
    }
    f16Table = t;
  }
  return f16Table;
}

/** f16 bits as f32 values [n] (exact: every f16 is a float32). */
export function f16ToF32(src: Uint16Array, out: Float32Array = new Float32Array(src.length)): Float32Array {
  if (out.length < src.length) throw new Error(`f16ToF32: out holds ${out.length} values, src ${src.length}`);
  const t = f16ToF32Table();
  for (let i = 0; i < src.length; i++) out[i] = t[src[i]!]!;
  return out;
}

/** bf16 bits as f32 values [n] (exact: bf16 is the top half of a float32). */
export function bf16ToF32(src: Uint16Array, out: Float32Array = new Float32Array(src.length)): Float32Array {
  if (out.length < src.length) throw new Error(`bf16ToF32: out holds ${out.length} values, src ${src.length}`);
  const bits = new Uint32Array(out.buffer, out.byteOffset, src.length);
  let i = 0;
  // Two values per 32-bit read where src is 4-byte aligned (LoRA widens a bf16 base layer by layer
  // in the update's hot path, lora/merged-layers.ts): about half the time of one per read.
  if (LITTLE_ENDIAN && (src.byteOffset & 3) === 0) {
    const pairs = src.length >>> 1;
    const src32 = new Uint32Array(src.buffer, src.byteOffset, pairs);
    for (let j = 0; j < pairs; j++) {
      const v = src32[j]!;
      bits[2 * j] = v << 16; // the lower address's value is the low half
      bits[2 * j + 1] = v & 0xffff0000;
    }
    i = 2 * pairs;
  }
  for (; i < src.length; i++) bits[i] = src[i]! << 16;
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

let bf16ToF16Table: Uint16Array | null = null;

/**
 * bf16 bits as f16 bits [n], each rounded to nearest even as f32ToF16 would round the same value:
 * one lookup in a 65536-entry table (128 KiB, built once) per value.
 */
export function bf16ToF16(src: Uint16Array, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  if (out.length < src.length) throw new Error(`bf16ToF16: out holds ${out.length} values, src ${src.length}`);
  if (!bf16ToF16Table) {
    const t = new Uint16Array(65536);
    for (let h = 0; h < 65536; h++) t[h] = f32BitsToF16(h << 16);
    bf16ToF16Table = t;
  }
  const t = bf16ToF16Table;
  for (let i = 0; i < src.length; i++) out[i] = t[src[i]!]!;
  return out;
}

/** The number of NaN or ±infinity values among 16-bit floats (all exponent bits set). */
export function countNonFiniteHalf(src: Uint16Array, format: 'f16' | 'bf16'): number {
  const mask = format === 'f16' ? 0x7c00 : 0x7f80;
  let bad = 0;
  for (let i = 0; i < src.length; i++) if ((src[i]! & mask) === mask) bad++;
  return bad;
}

/** f32 values as bf16 bits [n], rounded to nearest even (NaN stays NaN). */
export function f32ToBf16(src: Float32Array, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  if (out.length < src.length) throw new Error(`f32ToBf16: out holds ${out.length} values, src ${src.length}`);
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) {
    const x = bits[i]!;
    out[i] = (x & 0x7fffffff) > 0x7f800000 ? (x >>> 16) | 0x40 : (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
  return out;
}

/** The number of values whose bits are NaN or ±infinity in an f32 array (0 for finite weights). */
export function countNonFinite(src: Float32Array): number {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  let bad = 0;
  for (let i = 0; i < bits.length; i++) if ((bits[i]! & 0x7f800000) === 0x7f800000) bad++;
  return bad;
}

/** A float32's bit pattern (for tests and edge cases; bulk code uses typed-array views). */
export function floatBits(x: number): number {
  f32[0] = x;
  return u32[0]!;
}
