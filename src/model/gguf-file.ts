import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata } from '@huggingface/gguf';
import { endianness } from 'node:os';
import { setFloat16 } from '@petamoriken/float16';

/**
 * A GGUF (version 3) file: header and key/value metadata (serialized by @huggingface/gguf), then
 * one info record per tensor (name, dims, ggml type, data offset), padding to the alignment, and
 * the tensor data, each tensor starting aligned. @huggingface/gguf writes the metadata part only,
 * so the tensor part is written here, following gguf-py's GGUFWriter.
 *
 * Shapes are given as in safetensors (outermost first, [out, in] for a weight matrix); GGUF lists
 * dims innermost first (ggml's ne[0]), so they are written reversed, as gguf-py does.
 */
export const GGUF_ALIGNMENT = 32;

/** ggml tensor types used here (ggml.h: GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1). */
export const GGML_TYPE = { F32: 0, F16: 1 } as const;
export type GgmlTensorType = keyof typeof GGML_TYPE;

export type GgufValue =
  | { type: GGUFValueType.STRING; value: string }
  | { type: GGUFValueType.UINT32 | GGUFValueType.INT32 | GGUFValueType.FLOAT32; value: number }
  | { type: GGUFValueType.BOOL; value: boolean }
  | {
      type: GGUFValueType.ARRAY;
      subType: GGUFValueType.STRING | GGUFValueType.INT32 | GGUFValueType.FLOAT32 | GGUFValueType.UINT32;
      value: (string | number)[];
    };

/** Constructors for metadata values, so call sites read `kv.u32(4)`. */
export const kv = {
  str: (value: string): GgufValue => ({ type: GGUFValueType.STRING, value }),
  u32: (value: number): GgufValue => ({ type: GGUFValueType.UINT32, value }),
  f32: (value: number): GgufValue => ({ type: GGUFValueType.FLOAT32, value }),
  bool: (value: boolean): GgufValue => ({ type: GGUFValueType.BOOL, value }),
  strs: (value: string[]): GgufValue => ({ type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING, value }),
  i32s: (value: number[]): GgufValue => ({ type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value }),
  f32s: (value: number[]): GgufValue => ({ type: GGUFValueType.ARRAY, subType: GGUFValueType.FLOAT32, value }),
};

export interface GgufTensor {
  name: string;
  /** Outermost first, as in safetensors. */
  shape: readonly number[];
  data: Float32Array;
  /** How the values are stored in the file. */
  type: GgmlTensorType;
}

const pad = (n: number, a: number) => Math.ceil(n / a) * a;

function tensorBytes(t: GgufTensor): number {
  return t.data.length * (t.type === 'F32' ? 4 : 2);
}

/** Float32 values as little-endian IEEE half floats (round to nearest even). */
function toF16Bytes(src: Float32Array): Uint8Array {
  const out = new Uint8Array(src.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < src.length; i++) setFloat16(view, 2 * i, src[i]!, true);
  return out;
}

function tensorInfo(t: GgufTensor, offset: number): Buffer {
  const name = Buffer.from(t.name, 'utf8');
  const dims = [...t.shape].reverse();
  const b = Buffer.alloc(8 + name.length + 4 + 8 * dims.length + 4 + 8);
  let p = b.writeBigUInt64LE(BigInt(name.length), 0);
  p += name.copy(b, p);
  p = b.writeUInt32LE(dims.length, p);
  for (const d of dims) p = b.writeBigUInt64LE(BigInt(d), p);
  p = b.writeUInt32LE(GGML_TYPE[t.type], p);
  b.writeBigUInt64LE(BigInt(offset), p);
  return b;
}

export function encodeGguf({
  metadata,
  tensors,
}: {
  metadata: Readonly<Record<string, GgufValue>>;
  tensors: readonly GgufTensor[];
}): Buffer {
  if (endianness() !== 'LE') throw new Error('GGUF export needs a little-endian host');
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length)
      throw new Error(`tensor ${t.name}: shape [${t.shape.join(', ')}] holds ${n} values, data has ${t.data.length}`);
  }
  const typed = {
    version: { value: 3, type: GGUFValueType.UINT32 },
    tensor_count: { value: BigInt(tensors.length), type: GGUFValueType.UINT64 },
    kv_count: { value: BigInt(Object.keys(metadata).length), type: GGUFValueType.UINT64 },
    ...metadata,
  } as unknown as GGUFTypedMetadata;
  // Alignment 1: no padding after the key/values, since the tensor infos follow them directly.
  const head = serializeGgufMetadata(typed, { littleEndian: true, alignment: 1 });
  const offsets: number[] = [];
  let dataSize = 0;
  for (const t of tensors) {
    offsets.push(dataSize);
    dataSize = pad(dataSize + tensorBytes(t), GGUF_ALIGNMENT);
  }
  const infos = tensors.map((t, i) => tensorInfo(t, offsets[i]!));
  const headerSize = head.length + infos.reduce((a, b) => a + b.length, 0);
  const dataStart = pad(headerSize, GGUF_ALIGNMENT);
  const out = Buffer.alloc(dataStart + dataSize); // zero-filled: the padding is zeros
  out.set(head, 0);
  let p = head.length;
  for (const info of infos) p += info.copy(out, p);
  tensors.forEach((t, i) => {
    const bytes =
      t.type === 'F32' ? new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) : toF16Bytes(t.data);
    out.set(bytes, dataStart + offsets[i]!);
  });
  return out;
}
