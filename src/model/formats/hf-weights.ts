import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import {
  bf16ToF16,
  bf16ToF32,
  countNonFinite,
  countNonFiniteHalf,
  f16ToF32,
  f32ToF16,
} from '../../tensor/half-float.ts';
import type { ModelConfig } from '../network/config.ts';
import { parseHfConfig, type HfArchitecture } from './hf-config.ts';
import { CheckpointFormatError, readSafetensorsHeader, type TensorLocation } from './safetensors.ts';
import { tensorSpecs } from '../network/weights.ts';

/**
 * A Hugging Face model directory's weights, located but not read: config.json, and the headers of
 * model.safetensors or of the shards model.safetensors.index.json lists. Every tensor the config
 * implies must be there with its shape; tensors a loader may carry that change nothing (RoPE
 * inv_freq buffers, lm_head when embeddings are tied) are skipped, any other is an error. Values
 * are then read a chunk at a time (readTensorF32), widened from F32, F16 or BF16 with typed-array
 * bulk conversions, so neither the import nor the export holds a file's bytes whole.
 */
export const HF_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  index: 'model.safetensors.index.json',
} as const;

export interface HfWeights {
  cfg: ModelConfig;
  architecture: HfArchitecture;
  /** The tensors the model computes with, by Hugging Face name (network/weights.ts names). */
  tensors: Map<string, TensorLocation & { name: string }>;
}

const IndexSchema = z.looseObject({ weight_map: z.record(z.string(), z.string()) });

/** Tensors a loader may find that carry nothing the model computes with. */
const IGNORED = /\.rotary_emb\.inv_freq$/;

/** Bytes per value of the dtypes weights may have. */
const WIDTH: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };

export async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new CheckpointFormatError(`${path} does not exist`);
    throw new CheckpointFormatError(`${path} is not valid JSON`);
  }
}

async function weightFiles(dir: string): Promise<string[]> {
  if (!existsSync(join(dir, HF_FILES.index))) return [HF_FILES.weights];
  const idx = IndexSchema.safeParse(await readJson(join(dir, HF_FILES.index)));
  if (!idx.success) throw new CheckpointFormatError(`${join(dir, HF_FILES.index)}: no weight_map`);
  return [...new Set(Object.values(idx.data.weight_map))];
}

export async function openHfWeights(dir: string): Promise<HfWeights> {
  const { cfg, architecture } = parseHfConfig(await readJson(join(dir, HF_FILES.config)), join(dir, HF_FILES.config));
  const found = new Map<string, TensorLocation>();
  for (const f of await weightFiles(dir)) {
    const what = join(dir, f);
    let header: Map<string, TensorLocation>;
    try {
      header = readSafetensorsHeader(what, what);
    } catch (e) {
      if (e instanceof CheckpointFormatError) throw e;
      throw new CheckpointFormatError(`${what} is listed as a weight file but cannot be read`);
    }
    for (const [name, loc] of header) {
      const prev = found.get(name);
      if (prev) throw new CheckpointFormatError(`${what}: tensor ${name} is also in ${prev.path}`);
      found.set(name, loc);
    }
  }
  const specs = tensorSpecs(cfg, 'lm');
  const expected = new Set(specs.map((s) => s.name));
  for (const [name, loc] of found) {
    if (expected.has(name) || IGNORED.test(name) || (cfg.tiedEmbeddings && name === 'lm_head.weight')) continue;
    throw new CheckpointFormatError(
      `${loc.path}: unexpected tensor ${name} for a ${architecture} model (does config.json match the weights?)`,
    );
  }
  const tensors: HfWeights['tensors'] = new Map();
  for (const s of specs) {
    const t = found.get(s.name);
    if (!t) throw new CheckpointFormatError(`${dir}: no tensor ${s.name} in its safetensors files`);
    if (t.shape.length !== s.shape.length || t.shape.some((d, i) => d !== s.shape[i]))
      throw new CheckpointFormatError(
        `${t.path}: tensor ${s.name} has shape [${t.shape.join(', ')}], config.json implies [${s.shape.join(', ')}]`,
      );
    const width = WIDTH[t.dtype];
    if (width === undefined)
      throw new CheckpointFormatError(`${t.path}: tensor ${s.name} has dtype ${t.dtype}; supported: F32, F16, BF16`);
    if (t.length !== s.size * width)
      throw new CheckpointFormatError(
        `${t.path}: tensor ${s.name} has ${t.length} bytes; its shape holds ${s.size} ${t.dtype} values (${s.size * width} bytes)`,
      );
    tensors.set(s.name, { ...t, name: s.name });
  }
  return { cfg, architecture, tensors };
}

let scratch: Uint8Array<ArrayBuffer> = new Uint8Array(0);

/**
 * Values [start, start + count) of a located tensor as f32, into `out` (returned); refuses NaN or
 * infinity, which would make every log-probability NaN (safetensors.ts checkFinite).
 */
export function readTensorF32({
  t,
  start,
  count,
  out = new Float32Array(count),
}: {
  t: TensorLocation & { name: string };
  start: number;
  count: number;
  out?: Float32Array;
}): Float32Array {
  const width = WIDTH[t.dtype]!;
  const bytes = count * width;
  const into = t.dtype === 'F32' ? new Uint8Array(out.buffer, out.byteOffset, bytes) : (scratch = grow(scratch, bytes));
  readRange(t, start * width, into.subarray(0, bytes));
  const values = out.subarray(0, count);
  if (t.dtype === 'F32') {
    const bad = countNonFinite(values);
    if (bad > 0) throw nonFinite(t, bad);
    return values;
  }
  // Checked on the 16-bit source, which is half the bytes to scan.
  const half = new Uint16Array(into.buffer, 0, count);
  const bad = countNonFiniteHalf(half, t.dtype === 'F16' ? 'f16' : 'bf16');
  if (bad > 0) throw nonFinite(t, bad);
  return t.dtype === 'BF16' ? bf16ToF32(half, values) : f16ToF32(half, values);
}

/**
 * Values [start, start + count) of a located tensor as f16 bits into `out` (returned): F16 bytes
 * as they are, BF16 through one table lookup per value (half-float.ts), F32 rounded; refuses NaN
 * or infinity in the source.
 */
export function readTensorF16({
  t,
  start,
  count,
  out,
}: {
  t: TensorLocation & { name: string };
  start: number;
  count: number;
  out: Uint16Array;
}): Uint16Array {
  const values = out.subarray(0, count);
  if (t.dtype === 'F32') return f32ToF16(readTensorF32({ t, start, count }), values);
  const into =
    t.dtype === 'F16'
      ? new Uint8Array(out.buffer, out.byteOffset, 2 * count)
      : (scratch = grow(scratch, 2 * count)).subarray(0, 2 * count);
  readRange(t, start * 2, into);
  const src = new Uint16Array(into.buffer, into.byteOffset, count);
  const bad = countNonFiniteHalf(src, t.dtype === 'F16' ? 'f16' : 'bf16');
  if (bad > 0) throw nonFinite(t, bad);
  return t.dtype === 'F16' ? values : bf16ToF16(src, values);
}

function nonFinite(t: { path: string; name: string }, bad: number): CheckpointFormatError {
  return new CheckpointFormatError(
    `${t.path}: tensor ${t.name} holds ${bad} non-finite values (NaN or infinity); weights must be finite numbers`,
  );
}

/** Fills `into` with the tensor's bytes from byte `from` of its data. */
function readRange(t: TensorLocation & { name: string }, from: number, into: Uint8Array): void {
  const fd = openSync(t.path, 'r');
  try {
    for (let got = 0; got < into.length;) {
      // At most 1 GiB per call: Node refuses a length above 2^31 - 1.
      const n = readSync(fd, into, got, Math.min(into.length - got, 1 << 30), t.offset + from + got);
      if (n === 0) throw new CheckpointFormatError(`${t.path}: tensor ${t.name}'s data ends early`);
      got += n;
    }
  } finally {
    closeSync(fd);
  }
}

function grow(buf: Uint8Array<ArrayBuffer>, bytes: number): Uint8Array<ArrayBuffer> {
  return buf.byteLength >= bytes ? buf : new Uint8Array(bytes);
}
