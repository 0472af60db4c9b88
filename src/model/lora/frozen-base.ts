/**
 * The base's adapted matrices, kept frozen beside the merged weights (lora-adapter.ts). In bf16
 * when every value already is one (a Hugging Face base shipped in bf16, as Qwen3's is: the copy is
 * then exact at half the bytes), else in f32. Either way reading it back gives the base's f32
 * values bit for bit, so the merge W0 + s B A does not depend on the format.
 */
import { bf16ToF32 } from '../../tensor/half-float.ts';

export class FrozenBase {
  readonly format: 'bf16' | 'f32';
  readonly size: number;
  private readonly f32: Float32Array | null; // [size]
  private readonly bf16: Uint16Array | null; // [size] the top halves of the f32 values

  /** A copy of `parts` laid end to end. */
  constructor(parts: readonly Float32Array[]) {
    this.size = parts.reduce((a, p) => a + p.length, 0);
    const exact = parts.every(isBf16);
    this.format = exact ? 'bf16' : 'f32';
    this.bf16 = exact ? new Uint16Array(this.size) : null;
    this.f32 = exact ? null : new Float32Array(this.size);
    let at = 0;
    for (const p of parts) {
      if (this.f32) this.f32.set(p, at);
      else {
        const bits = new Uint32Array(p.buffer, p.byteOffset, p.length);
        for (let k = 0; k < p.length; k++) this.bf16![at + k] = bits[k]! >>> 16;
      }
      at += p.length;
    }
  }

  /** Bytes held. */
  get bytes(): number {
    return this.size * (this.format === 'bf16' ? 2 : 4);
  }

  /** Elements [at, at + n) as f32: a view of the f32 copy, or widened into `scratch` [>= n]. */
  read(at: number, n: number, scratch: Float32Array): Float32Array {
    if (this.f32) return this.f32.subarray(at, at + n);
    return bf16ToF32(this.bf16!.subarray(at, at + n), scratch).subarray(0, n);
  }
}

/** Every value's low 16 bits are zero: it is a bf16 value, exactly. */
function isBf16(p: Float32Array): boolean {
  const bits = new Uint32Array(p.buffer, p.byteOffset, p.length);
  for (let k = 0; k < bits.length; k++) if ((bits[k]! & 0xffff) !== 0) return false;
  return true;
}
