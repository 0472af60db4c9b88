import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { bf16ToF32, f16ToF32 } from '../../tensor/half-float.ts';
import type { ModelConfig } from '../network/config.ts';
import type { HfArchitecture } from './hf-config.ts';
import { HF_FILES, openHfWeights, readTensorF32 } from './hf-weights.ts';
import { PolicyModel } from '../network/policy.ts';
import { CheckpointFormatError } from './safetensors.ts';
import type { VocabMap } from '../tokenizer/vocab-map.ts';
import { paramCount, tensorSpecs } from '../network/weights.ts';

/**
 * A Hugging Face model directory (config.json + model.safetensors, or shards listed in
 * model.safetensors.index.json) as a PolicyModel with fresh optimizer state: what `--init` and
 * `--policy` take besides our own checkpoints. Weights may be F32, F16 or BF16 and are widened to
 * f32, read a chunk at a time straight into the parameter buffer (hf-weights.ts), so the import
 * holds the f32 weights and one chunk, never the file's bytes whole.
 */
export { HF_FILES };

const CHUNK_VALUES = 1 << 22;

/** True when dir looks like a Hugging Face model directory (and not one of our checkpoints). */
export function isHfModelDir(dir: string): boolean {
  return (
    existsSync(join(dir, HF_FILES.config)) &&
    (existsSync(join(dir, HF_FILES.weights)) || existsSync(join(dir, HF_FILES.index))) &&
    !existsSync(join(dir, 'trainer_state.json'))
  );
}

/** Widens one tensor's bytes to f32 (little-endian F32, F16 or BF16). */
export function tensorToF32(t: { dtype: string; bytes: Uint8Array }, name: string, what: string): Float32Array {
  const size = { F32: 4, F16: 2, BF16: 2 }[t.dtype];
  if (size !== undefined && t.bytes.byteLength % size !== 0)
    throw new CheckpointFormatError(
      `${what}: tensor ${name} has ${t.bytes.byteLength} bytes, not a whole number of ${t.dtype} values`,
    );
  // Typed views need aligned bytes; a safetensors offset need not be.
  const aligned = t.bytes.byteOffset % 4 === 0 ? t.bytes : t.bytes.slice();
  switch (t.dtype) {
    case 'F32': {
      const out = new Float32Array(t.bytes.byteLength / 4);
      new Uint8Array(out.buffer).set(t.bytes);
      return out;
    }
    case 'F16':
      return f16ToF32(new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 2));
    case 'BF16':
      return bf16ToF32(new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 2));
    default:
      throw new CheckpointFormatError(`${what}: tensor ${name} has dtype ${t.dtype}; supported: F32, F16, BF16`);
  }
}

export interface HfModel {
  cfg: ModelConfig;
  architecture: HfArchitecture;
  policy: PolicyModel;
}

export async function loadHfModel(
  dir: string,
  options: { optim?: OptimizerConfig; vocab?: (vocabSize: number) => Promise<VocabMap | undefined> } = {},
): Promise<HfModel> {
  const { cfg, architecture, tensors } = await openHfWeights(dir);
  const specs = tensorSpecs(cfg, 'lm');
  const params = new Float32Array(paramCount(specs));
  for (const s of specs) {
    const t = tensors.get(s.name)!;
    for (let start = 0; start < s.size; start += CHUNK_VALUES) {
      const count = Math.min(CHUNK_VALUES, s.size - start);
      const at = s.offset + start;
      readTensorF32({ t, start, count, out: params.subarray(at, at + count) });
    }
  }
  const vocab = await options.vocab?.(cfg.vocabSize);
  const policy = new PolicyModel({
    config: cfg,
    optim: options.optim ?? DEFAULT_OPTIMIZER,
    params,
    ...(vocab ? { vocab } : {}),
  });
  return { cfg, architecture, policy };
}
