import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { z } from 'zod';

/**
 * The safetensors format, written by hand (it is tiny): 8-byte little-endian header length,
 * a JSON header {name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?: {str: str}},
 * then raw little-endian data, offsets relative to the data start. Only F32 is used here.
 */
export interface NamedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsFile {
  metadata: Record<string, string>;
  tensors: Map<string, { dtype: string; shape: number[]; bytes: Uint8Array }>;
}

export class CheckpointFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointFormatError';
  }
}

function assertLittleEndian(): void {
  // Float32Array bytes are host-order; the format is little-endian.
  if (endianness() !== 'LE') throw new Error('safetensors I/O needs a little-endian host');
}

export function encodeSafetensors(tensors: readonly NamedTensor[], metadata: Record<string, string> = {}): Buffer {
  return Buffer.concat([...safetensorsChunks(tensors, metadata)]);
}

/**
 * The bytes of a safetensors file, piece by piece: the header, then a view of each tensor's data
 * (no copy). A writer streams them (writeChunksAtomic), so a model of gigabytes is never copied
 * whole into one buffer (which at 0.6B parameters would pass Node's largest buffer for the AdamW
 * moments, 4.77 GB).
 */
export function* safetensorsChunks(
  tensors: readonly NamedTensor[],
  metadata: Record<string, string> = {},
): Generator<Uint8Array> {
  assertLittleEndian();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length)
      throw new Error(`tensor ${t.name}: shape [${t.shape.join(',')}] holds ${n} values but data has ${t.data.length}`);
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  // Pad the header with spaces so the data starts 8-byte aligned (what the reference writer does).
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const hbytes = Buffer.from(json, 'utf8');
  const head = Buffer.alloc(8 + hbytes.length);
  head.writeBigUInt64LE(BigInt(hbytes.length), 0);
  hbytes.copy(head, 8);
  yield head;
  for (const t of tensors) yield new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

const EntrySchema = z
  .object({
    dtype: z.string(),
    shape: z.array(z.number().int().nonnegative()),
    data_offsets: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
  })
  .strict();

/** Where one tensor's bytes lie: [begin, end) relative to the data start. */
interface HeaderEntry {
  dtype: string;
  shape: number[];
  begin: number;
  end: number;
}

/** The JSON header (its bytes), with every tensor's data checked to lie within `dataBytes`. */
function parseHeader(
  json: Uint8Array,
  dataBytes: number,
  what: string,
): { metadata: Record<string, string>; entries: Map<string, HeaderEntry> } {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8'));
  } catch {
    throw new CheckpointFormatError(`${what}: the header is not valid JSON`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new CheckpointFormatError(`${what}: the header is not a JSON object`);
  const metadata: Record<string, string> = {};
  const entries = new Map<string, HeaderEntry>();
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      const m = z.record(z.string(), z.string()).safeParse(value);
      if (!m.success) throw new CheckpointFormatError(`${what}: __metadata__ must map strings to strings`);
      Object.assign(metadata, m.data);
      continue;
    }
    const e = EntrySchema.safeParse(value);
    if (!e.success) throw new CheckpointFormatError(`${what}: tensor ${name} has a malformed header entry`);
    const [begin, end] = e.data.data_offsets;
    if (end < begin || end > dataBytes)
      throw new CheckpointFormatError(
        `${what}: tensor ${name}'s data offsets [${begin}, ${end}] fall outside the file`,
      );
    entries.set(name, { dtype: e.data.dtype, shape: e.data.shape, begin, end });
  }
  return { metadata, entries };
}

/** Parses a file's bytes; `what` names the file in errors. */
export function decodeSafetensors(buf: Uint8Array, what: string): SafetensorsFile {
  assertLittleEndian();
  if (buf.length < 8) throw new CheckpointFormatError(`${what}: too short to be a safetensors file`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const hlen = Number(view.getBigUint64(0, true));
  if (8 + hlen > buf.length)
    throw new CheckpointFormatError(`${what}: header length ${hlen} runs past the end of the file`);
  const dataStart = 8 + hlen;
  const { metadata, entries } = parseHeader(buf.subarray(8, dataStart), buf.length - dataStart, what);
  const tensors: SafetensorsFile['tensors'] = new Map();
  for (const [name, e] of entries)
    tensors.set(name, { dtype: e.dtype, shape: e.shape, bytes: buf.subarray(dataStart + e.begin, dataStart + e.end) });
  return { metadata, tensors };
}

/** A tensor located in a file on disk, not yet read: its bytes are [offset, offset + length). */
export interface TensorLocation {
  dtype: string;
  shape: number[];
  path: string;
  offset: number;
  length: number;
}

/** The header of the safetensors file at `path`, read alone: metadata, entries, where data starts. */
function readHeaderOf(
  path: string,
  what: string,
): { metadata: Record<string, string>; entries: Map<string, HeaderEntry>; dataStart: number } {
  assertLittleEndian();
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const len = Buffer.alloc(8);
    if (size < 8 || readSync(fd, len, 0, 8, 0) !== 8)
      throw new CheckpointFormatError(`${what}: too short to be a safetensors file`);
    const hlen = Number(len.readBigUInt64LE(0));
    if (8 + hlen > size)
      throw new CheckpointFormatError(`${what}: header length ${hlen} runs past the end of the file`);
    const json = Buffer.alloc(hlen);
    if (readSync(fd, json, 0, hlen, 8) !== hlen) throw new CheckpointFormatError(`${what}: the header ends early`);
    const dataStart = 8 + hlen;
    return { ...parseHeader(json, size - dataStart, what), dataStart };
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads only the header of the safetensors file at `path`: where each tensor lies, so a model of
 * gigabytes is read a tensor (or a chunk) at a time instead of all at once.
 */
export function readSafetensorsHeader(path: string, what: string): Map<string, TensorLocation> {
  const { entries, dataStart } = readHeaderOf(path, what);
  const out = new Map<string, TensorLocation>();
  for (const [name, e] of entries)
    out.set(name, { dtype: e.dtype, shape: e.shape, path, offset: dataStart + e.begin, length: e.end - e.begin });
  return out;
}

/**
 * The safetensors file at `path` with each tensor's bytes read from disk when asked for, one
 * tensor at a time: a checkpoint of a 0.6B model (2.4 GB of weights, 4.8 GB of AdamW moments) is
 * larger than one read of a whole file or one Node buffer can hold.
 */
export function openSafetensors(path: string, what: string): SafetensorsFile {
  const { metadata, entries, dataStart } = readHeaderOf(path, what);
  const tensors: SafetensorsFile['tensors'] = new Map();
  for (const [name, e] of entries) {
    const read = (): Uint8Array => readRange(path, dataStart + e.begin, e.end - e.begin, `${what}: tensor ${name}`);
    tensors.set(name, {
      dtype: e.dtype,
      shape: e.shape,
      get bytes() {
        return read();
      },
    });
  }
  return { metadata, tensors };
}

/** `length` bytes of the file at `offset`, at most 1 GiB per read (Node refuses more than 2^31 - 1). */
function readRange(path: string, offset: number, length: number, what: string): Uint8Array {
  const out = new Uint8Array(length);
  const fd = openSync(path, 'r');
  try {
    for (let got = 0; got < length;) {
      const n = readSync(fd, out, got, Math.min(length - got, 1 << 30), offset + got);
      if (n === 0) throw new CheckpointFormatError(`${what}: the data ends early`);
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/**
 * Copies tensor `name` of file into dst after checking dtype and shape; errors name the tensor.
 */
export function readTensorInto({
  file,
  name,
  shape,
  dst,
  what,
}: {
  file: SafetensorsFile;
  name: string;
  shape: readonly number[];
  dst: Float32Array;
  what: string;
}): void {
  const t = file.tensors.get(name);
  if (!t) throw new CheckpointFormatError(`${what}: missing tensor ${name}`);
  if (t.dtype !== 'F32') throw new CheckpointFormatError(`${what}: tensor ${name} has dtype ${t.dtype}, expected F32`);
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new CheckpointFormatError(
      `${what}: tensor ${name} has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`,
    );
  }
  const bytes = t.bytes; // read once: a file opened with openSafetensors reads it from disk here
  if (bytes.length !== dst.byteLength)
    throw new CheckpointFormatError(`${what}: tensor ${name} has ${bytes.length} bytes, expected ${dst.byteLength}`);
  new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength).set(bytes);
}

/**
 * Refuses a tensor holding NaN or ±Infinity (Hugging Face directories here, checkpoints in
 * checkpoint.ts, GGUF files in gguf-check.ts): such weights make every log-probability NaN or 0,
 * so a corrupt file would otherwise sample and score silently.
 */
export function checkFinite({ data, name, what }: { data: Float32Array; name: string; what: string }): void {
  let bad = 0;
  for (let i = 0; i < data.length; i++) if (!Number.isFinite(data[i]!)) bad++;
  if (bad > 0)
    throw new CheckpointFormatError(
      `${what}: tensor ${name} holds ${bad} non-finite values (NaN or infinity); weights must be finite numbers`,
    );
}
