import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata } from '@huggingface/gguf';
import { endianness } from 'node:os';
import { f32ToF16 } from '../../tensor/half-float.ts';
import { writeChunksAtomic } from '../../util/atomic-write.ts';

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

/** Values [start, start + count) of a tensor, row-major; may be a view valid until the next call. */
export type TensorRead = (start: number, count: number) => Float32Array;

export interface GgufTensor {
  name: string;
  /** Outermost first, as in safetensors. */
  shape: readonly number[];
  /** The values, or a reader of them (a tensor still in its file, converted a chunk at a time). */
  data: Float32Array | TensorRead;
  /** How the values are stored in the file. */
  type: GgmlTensorType;
  /**
   * For an F16 tensor: values [start, start + count) as f16 bits into `out` (returned), where the
   * source converts without going through f32 (BF16 or F16 weights in a file).
   */
  readF16?: TensorReadF16 | undefined;
}

export type TensorReadF16 = (start: number, count: number, out: Uint16Array) => Uint16Array;

const pad = (n: number, a: number) => Math.ceil(n / a) * a;
/** Values converted and written per step: 16 MiB of f32, whatever the tensor's size. */
const CHUNK_VALUES = 1 << 22;

const valueCount = (t: GgufTensor) => t.shape.reduce((a, b) => a * b, 1);

function tensorBytes(t: GgufTensor): number {
  return valueCount(t) * (t.type === 'F32' ? 4 : 2);
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

interface GgufFileParts {
  metadata: Readonly<Record<string, GgufValue>>;
  tensors: readonly GgufTensor[];
}

/**
 * The file as a sequence of byte chunks: header, tensor infos and padding, then each tensor's
 * values converted CHUNK_VALUES at a time (f16 through typed-array bit operations, half-float.ts),
 * each followed by the zeros that align the next. Chunks may share one scratch buffer: consume
 * each before asking for the next.
 */
export function* ggufChunks({ metadata, tensors }: GgufFileParts): Generator<Uint8Array> {
  if (endianness() !== 'LE') throw new Error('GGUF export needs a little-endian host');
  for (const t of tensors) {
    const n = valueCount(t);
    if (typeof t.data !== 'function' && n !== t.data.length)
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
  yield head;
  yield* infos;
  yield new Uint8Array(pad(headerSize, GGUF_ALIGNMENT) - headerSize);
  const half = new Uint16Array(CHUNK_VALUES);
  for (const t of tensors) {
    const n = valueCount(t);
    const read: TensorRead =
      typeof t.data === 'function' ? t.data : (s, c) => (t.data as Float32Array).subarray(s, s + c);
    for (let s = 0; s < n; s += CHUNK_VALUES) {
      const c = Math.min(CHUNK_VALUES, n - s);
      if (t.type === 'F16' && t.readF16) {
        yield new Uint8Array(t.readF16(s, c, half).buffer, 0, 2 * c);
        continue;
      }
      const values = read(s, c);
      if (values.length !== c) throw new Error(`tensor ${t.name}: asked for ${c} values at ${s}, got ${values.length}`);
      if (t.type === 'F32') yield new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
      else {
        f32ToF16(values, half);
        yield new Uint8Array(half.buffer, 0, 2 * c);
      }
    }
    const bytes = tensorBytes(t);
    yield new Uint8Array(pad(bytes, GGUF_ALIGNMENT) - bytes);
  }
}

/** The whole file in memory (tests and small models; writeGguf streams). */
export function encodeGguf(parts: GgufFileParts): Buffer {
  return Buffer.concat(Array.from(ggufChunks(parts), (c) => Buffer.from(c)));
}

/** Writes the file chunk by chunk, atomically; returns its size in bytes. */
export function writeGguf(path: string, parts: GgufFileParts): number {
  let bytes = 0;
  function* counted(): Generator<Uint8Array> {
    for (const c of ggufChunks(parts)) {
      bytes += c.length;
      yield c;
    }
  }
  writeChunksAtomic(path, counted());
  return bytes;
}
