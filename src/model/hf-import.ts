import { getFloat16 } from '@petamoriken/float16';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../optim/config.ts';
import type { ModelConfig } from './config.ts';
import { parseHfConfig, type HfArchitecture } from './hf-config.ts';
import { PolicyModel } from './policy.ts';
import { CheckpointFormatError, checkFinite, decodeSafetensors, type SafetensorsFile } from './safetensors.ts';
import type { VocabMap } from './vocab-map.ts';
import { paramCount, tensorSpecs } from './weights.ts';

/**
 * A Hugging Face model directory (config.json + model.safetensors, or shards listed in
 * model.safetensors.index.json) as a PolicyModel with fresh optimizer state: what `--init` and
 * `--policy` take besides our own checkpoints. Weights may be F32, F16 or BF16 and are widened to
 * f32. Tensor names are Hugging Face's, which are also our checkpoint's (weights.ts); tensors a
 * loader may carry that change nothing (RoPE inv_freq buffers, lm_head when embeddings are tied)
 * are skipped, any other unknown tensor is an error, as is a missing one.
 */
export const HF_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  index: 'model.safetensors.index.json',
} as const;

/** True when dir looks like a Hugging Face model directory (and not one of our checkpoints). */
export function isHfModelDir(dir: string): boolean {
  return (
    existsSync(join(dir, HF_FILES.config)) &&
    (existsSync(join(dir, HF_FILES.weights)) || existsSync(join(dir, HF_FILES.index))) &&
    !existsSync(join(dir, 'trainer_state.json'))
  );
}

const IndexSchema = z.looseObject({ weight_map: z.record(z.string(), z.string()) });

/** Widens one tensor's bytes to f32 (little-endian F32, F16 or BF16). */
export function tensorToF32(t: { dtype: string; bytes: Uint8Array }, name: string, what: string): Float32Array {
  const size = { F32: 4, F16: 2, BF16: 2 }[t.dtype];
  if (size !== undefined && t.bytes.byteLength % size !== 0)
    throw new CheckpointFormatError(
      `${what}: tensor ${name} has ${t.bytes.byteLength} bytes, not a whole number of ${t.dtype} values`,
    );
  const view = new DataView(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength);
  switch (t.dtype) {
    case 'F32': {
      const out = new Float32Array(t.bytes.byteLength / 4);
      new Uint8Array(out.buffer).set(t.bytes);
      return out;
    }
    case 'F16': {
      const out = new Float32Array(t.bytes.byteLength / 2);
      for (let i = 0; i < out.length; i++) out[i] = getFloat16(view, 2 * i, true);
      return out;
    }
    case 'BF16': {
      // bfloat16 is the top half of a float32.
      const out = new Float32Array(t.bytes.byteLength / 2);
      const bits = new Uint32Array(out.buffer);
      for (let i = 0; i < out.length; i++) bits[i] = view.getUint16(2 * i, true) << 16;
      return out;
    }
    default:
      throw new CheckpointFormatError(`${what}: tensor ${name} has dtype ${t.dtype}; supported: F32, F16, BF16`);
  }
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new CheckpointFormatError(`${path} does not exist`);
    throw new CheckpointFormatError(`${path} is not valid JSON`);
  }
}

/** Every tensor of the directory's safetensors file(s), by name. */
async function readWeightFiles(dir: string): Promise<Map<string, { file: SafetensorsFile; what: string }>> {
  const files: string[] = [];
  if (existsSync(join(dir, HF_FILES.index))) {
    const idx = IndexSchema.safeParse(await readJson(join(dir, HF_FILES.index)));
    if (!idx.success) throw new CheckpointFormatError(`${join(dir, HF_FILES.index)}: no weight_map`);
    files.push(...new Set(Object.values(idx.data.weight_map)));
  } else files.push(HF_FILES.weights);
  const out = new Map<string, { file: SafetensorsFile; what: string }>();
  for (const f of files) {
    const what = join(dir, f);
    let buf: Buffer;
    try {
      buf = await readFile(what);
    } catch {
      throw new CheckpointFormatError(`${what} is listed as a weight file but cannot be read`);
    }
    const file = decodeSafetensors(buf, what);
    for (const name of file.tensors.keys()) {
      if (out.has(name)) throw new CheckpointFormatError(`${what}: tensor ${name} is also in ${out.get(name)!.what}`);
      out.set(name, { file, what });
    }
  }
  return out;
}

/** Tensors a loader may find that carry nothing the model computes with. */
const IGNORED = /\.rotary_emb\.inv_freq$/;

export interface HfModel {
  cfg: ModelConfig;
  architecture: HfArchitecture;
  policy: PolicyModel;
}

export async function loadHfModel(
  dir: string,
  options: { optim?: OptimizerConfig; vocab?: (vocabSize: number) => Promise<VocabMap | undefined> } = {},
): Promise<HfModel> {
  const { cfg, architecture } = parseHfConfig(await readJson(join(dir, HF_FILES.config)), join(dir, HF_FILES.config));
  const tensors = await readWeightFiles(dir);
  const specs = tensorSpecs(cfg, 'lm');
  const params = new Float32Array(paramCount(specs));
  const expected = new Set(specs.map((s) => s.name));
  for (const name of tensors.keys()) {
    if (expected.has(name) || IGNORED.test(name) || (cfg.tiedEmbeddings && name === 'lm_head.weight')) continue;
    throw new CheckpointFormatError(
      `${tensors.get(name)!.what}: unexpected tensor ${name} for a ${architecture} model (does config.json match the weights?)`,
    );
  }
  for (const s of specs) {
    const src = tensors.get(s.name);
    if (!src) throw new CheckpointFormatError(`${dir}: no tensor ${s.name} in its safetensors files`);
    const t = src.file.tensors.get(s.name)!;
    if (t.shape.length !== s.shape.length || t.shape.some((d, i) => d !== s.shape[i]))
      throw new CheckpointFormatError(
        `${src.what}: tensor ${s.name} has shape [${t.shape.join(', ')}], config.json implies [${s.shape.join(', ')}]`,
      );
    const data = tensorToF32(t, s.name, src.what);
    if (data.length !== s.size)
      throw new CheckpointFormatError(`${src.what}: tensor ${s.name} holds ${data.length} values, its shape ${s.size}`);
    checkFinite({ data, name: s.name, what: src.what });
    params.set(data, s.offset);
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
