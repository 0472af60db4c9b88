import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CheckpointFormatError } from './safetensors.ts';

/**
 * Checks a GGUF file before llama.cpp (or node-llama-cpp's header reader) touches it: every count
 * in the header (tensors, key/values, string and array lengths, dimensions) is checked against the
 * bytes the file has left before it is looped over or allocated, every tensor's data must lie
 * inside the file, and F32 / F16 / BF16 tensors must hold finite numbers (quantized tensors are
 * not scanned). A header that claims 2^40 tensors is refused at once instead of hanging the
 * loader, and NaN weights are refused instead of sampling with every log-probability 0.
 *
 * The layout is GGUF versions 2 and 3 (ggml's docs/gguf.md): magic "GGUF", u32 version, u64
 * tensor count, u64 key/value count, the key/values, one info per tensor (name, u32 n_dims, u64
 * dims, u32 type, u64 offset), padding to `general.alignment` (default 32), the data.
 */

/** Bytes per value of the GGUF metadata types (gguf_type); 8 = string and 9 = array vary. */
const VALUE_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;
/** ggml's GGML_MAX_DIMS. */
const MAX_DIMS = 4;
/** ggml tensor types whose values are scanned for NaN / infinity, with their byte widths. */
const FLOAT_TYPES: Record<number, { bytes: number; name: string }> = {
  0: { bytes: 4, name: 'F32' },
  1: { bytes: 2, name: 'F16' },
  30: { bytes: 2, name: 'BF16' },
};
const CHUNK = 1 << 20;

/** Reads a file front to back through a buffer, refusing any read past its end. */
class Reader {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  pos = 0;

  constructor(
    private readonly fd: number,
    readonly size: number,
    private readonly what: string,
  ) {}

  get left(): number {
    return this.size - this.pos;
  }

  fail(message: string): never {
    throw new CheckpointFormatError(`${this.what}: ${message}`);
  }

  bytes(n: number, field: string): Buffer {
    if (n > this.left) this.fail(`${field} needs ${n} bytes at offset ${this.pos}, but the file ends at ${this.size}`);
    const end = this.pos + n;
    if (this.pos < this.bufStart || end > this.bufStart + this.buf.length) {
      const want = Math.min(Math.max(n, CHUNK), this.size - this.pos);
      this.buf = Buffer.alloc(want);
      let got = 0;
      while (got < want) {
        const k = readSync(this.fd, this.buf, got, want - got, this.pos + got);
        if (k === 0) this.fail(`the file is shorter than its size (${this.size})`);
        got += k;
      }
      this.bufStart = this.pos;
    }
    const out = this.buf.subarray(this.pos - this.bufStart, end - this.bufStart);
    this.pos = end;
    return out;
  }

  u32(field: string): number {
    return this.bytes(4, field).readUInt32LE(0);
  }

  /** A u64 that must fit in a safe integer (anything larger exceeds every file). */
  u64(field: string): number {
    const v = this.bytes(8, field).readBigUInt64LE(0);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${field} is ${v}, more than any file holds`);
    return Number(v);
  }

  /** A count of items at least `minBytes` each, bounded by the bytes left. */
  count(field: string, minBytes: number): number {
    const n = this.u64(field);
    if (n * minBytes > this.left)
      this.fail(`${field} is ${n}, but only ${this.left} bytes are left (at least ${minBytes} bytes each)`);
    return n;
  }

  string(field: string): string {
    const n = this.count(`${field} length`, 1);
    return this.bytes(n, field).toString('utf8');
  }
}

export interface GgufCheck {
  version: number;
  tensors: number;
  keys: number;
}

/** Checks the file at `path` (see above); throws CheckpointFormatError naming the field or tensor. */
export function checkGgufFile(path: string): GgufCheck {
  const what = `GGUF file ${path}`;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new CheckpointFormatError(`${what} cannot be opened (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new CheckpointFormatError(`${what} is not a regular file`);
    const r = new Reader(fd, st.size, what);
    if (r.bytes(4, 'the magic').toString('latin1') !== 'GGUF') r.fail('does not start with "GGUF"');
    const version = r.u32('the version');
    if (version !== 2 && version !== 3) r.fail(`version ${version} is not supported (2 or 3)`);
    const tensorCount = r.count('tensor_count', 24);
    const kvCount = r.count('kv_count', 13);
    let alignment = 32;
    for (let i = 0; i < kvCount; i++) {
      const key = r.string(`key ${i}`);
      const type = r.u32(`${key}'s type`);
      if (key === 'general.alignment' && type === 4) {
        alignment = r.u32(key);
        if (alignment === 0 || (alignment & (alignment - 1)) !== 0)
          r.fail(`general.alignment ${alignment} is not a power of two`);
      } else skipValue(r, type, key);
    }
    const infos: { name: string; type: number; offset: number; values: number }[] = [];
    for (let i = 0; i < tensorCount; i++) {
      const name = r.string(`tensor ${i}'s name`);
      const dims = r.u32(`tensor ${name}'s n_dims`);
      if (dims > MAX_DIMS) r.fail(`tensor ${name} has ${dims} dimensions (at most ${MAX_DIMS})`);
      let values = 1;
      for (let d = 0; d < dims; d++) {
        values *= r.u64(`tensor ${name}'s dimension ${d}`);
        if (values > st.size * 8) r.fail(`tensor ${name}'s dimensions hold more values than the file has bits`);
      }
      infos.push({ name, type: r.u32(`tensor ${name}'s type`), offset: r.u64(`tensor ${name}'s offset`), values });
    }
    const dataStart = Math.ceil(r.pos / alignment) * alignment;
    for (const t of infos) {
      const float = FLOAT_TYPES[t.type];
      const start = dataStart + t.offset;
      const bytes = float ? t.values * float.bytes : 0;
      if (start > st.size || start + bytes > st.size)
        r.fail(`tensor ${t.name}'s data (offset ${t.offset}, ${bytes} bytes) runs past the end of the file`);
      if (float) scanFloats({ fd, start, values: t.values, type: t.type, tensor: `${t.name} (${float.name})`, what });
    }
    return { version, tensors: tensorCount, keys: kvCount };
  } finally {
    closeSync(fd);
  }
}

function skipValue(r: Reader, type: number, key: string): void {
  if (type === STRING) {
    r.string(key);
    return;
  }
  if (type === ARRAY) {
    const sub = r.u32(`${key}'s element type`);
    if (sub === ARRAY) r.fail(`${key} is an array of arrays`);
    const width = sub === STRING ? 8 : VALUE_BYTES[sub];
    if (width === undefined) r.fail(`${key}'s element type ${sub} is not a GGUF type`);
    const n = r.count(`${key}'s array length`, width);
    if (sub === STRING) for (let i = 0; i < n; i++) r.string(`${key}[${i}]`);
    else r.bytes(n * width, key);
    return;
  }
  const width = VALUE_BYTES[type];
  if (width === undefined) r.fail(`${key}'s type ${type} is not a GGUF type`);
  r.bytes(width, key);
}

/** True when the chunk holds a NaN or infinity (all exponent bits set) of the given ggml type. */
function hasNonFinite(chunk: Uint8Array, type: number): boolean {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (type === 0) {
    for (let i = 0; i + 4 <= chunk.length; i += 4)
      if ((view.getUint32(i, true) & 0x7f800000) === 0x7f800000) return true;
    return false;
  }
  const mask = type === 1 ? 0x7c00 : 0x7f80; // F16 : BF16 exponent bits
  for (let i = 0; i + 2 <= chunk.length; i += 2) if ((view.getUint16(i, true) & mask) === mask) return true;
  return false;
}

function scanFloats(o: {
  fd: number;
  start: number;
  values: number;
  type: number;
  tensor: string;
  what: string;
}): void {
  const width = FLOAT_TYPES[o.type]!.bytes;
  const total = o.values * width;
  const buf = Buffer.alloc(Math.min(total, 16 * CHUNK));
  for (let done = 0; done < total;) {
    const n = readSync(o.fd, buf, 0, Math.min(buf.length, total - done), o.start + done);
    if (n === 0) throw new CheckpointFormatError(`${o.what}: tensor ${o.tensor}'s data ends early`);
    if (hasNonFinite(buf.subarray(0, n - (n % width)), o.type))
      throw new CheckpointFormatError(
        `${o.what}: tensor ${o.tensor} holds non-finite values (NaN or infinity); weights must be finite numbers`,
      );
    done += n - (n % width);
  }
}
