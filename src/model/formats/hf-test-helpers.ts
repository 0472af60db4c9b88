import { setFloat16 } from '@petamoriken/float16';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { headDim, kvHeads, type ModelConfig } from '../network/config.ts';
import type { PolicyModel } from '../network/policy.ts';

/**
 * Test helper: Hugging Face model directories written by hand from the file formats' specs (not
 * through this repository's exporter), so the importer is tested against independent bytes.
 */
export type Dtype = 'F32' | 'F16' | 'BF16';

/** Values as a safetensors dtype would store them (little-endian). */
export function encode(data: Float32Array, dtype: Dtype): Buffer {
  if (dtype === 'F32') return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out = Buffer.alloc(data.length * 2);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const bits = new Uint32Array(Float32Array.from(data).buffer);
  for (let i = 0; i < data.length; i++) {
    if (dtype === 'F16') setFloat16(view, 2 * i, data[i]!, true);
    else view.setUint16(2 * i, (bits[i]! + 0x7fff + ((bits[i]! >>> 16) & 1)) >>> 16, true); // round to nearest even
  }
  return out;
}

/** A safetensors file written by hand: header length, JSON header, data (the format's spec). */
function safetensors(tensors: { name: string; shape: number[]; data: Float32Array }[], dtype: Dtype): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const parts: Buffer[] = [];
  let off = 0;
  for (const t of tensors) {
    const b = encode(t.data, dtype);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [off, off + b.length] };
    parts.push(b);
    off += b.length;
  }
  const h = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([len, h, ...parts]);
}

/**
 * config.json as transformers writes it for LlamaForCausalLM, or Qwen3ForCausalLM when the model
 * has q/k norms, extra keys included.
 */
function llamaConfigJson(cfg: ModelConfig, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const qwen3 = cfg.qkNorm === true;
  return {
    architectures: [qwen3 ? 'Qwen3ForCausalLM' : 'LlamaForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: 1,
    eos_token_id: 6,
    head_dim: headDim(cfg),
    hidden_act: 'silu',
    hidden_size: cfg.dModel,
    initializer_range: 0.02,
    intermediate_size: cfg.mlpHidden,
    max_position_embeddings: cfg.maxSeqLen,
    mlp_bias: false,
    model_type: qwen3 ? 'qwen3' : 'llama',
    num_attention_heads: cfg.nHeads,
    num_hidden_layers: cfg.nLayers,
    num_key_value_heads: kvHeads(cfg),
    pretraining_tp: 1,
    rms_norm_eps: cfg.normEps,
    rope_scaling: null,
    rope_theta: cfg.ropeTheta,
    tie_word_embeddings: cfg.tiedEmbeddings,
    torch_dtype: 'bfloat16',
    transformers_version: '4.57.1',
    use_cache: true,
    ...(qwen3 ? { use_sliding_window: false, sliding_window: null, max_window_layers: cfg.nLayers } : {}),
    vocab_size: cfg.vocabSize,
    ...extra,
  };
}

/**
 * Writes policy's weights as a Hugging Face directory by hand (not through our exporter), in
 * `shards` files with an index when more than one; returns the directory.
 */
export function writeHfDir({
  root,
  policy,
  dtype,
  shards,
  name,
  extraTensors = [],
  config = {},
}: {
  root: string;
  policy: PolicyModel;
  dtype: Dtype;
  shards: number;
  name: string;
  extraTensors?: { name: string; shape: number[]; data: Float32Array }[];
  config?: Record<string, unknown>;
}): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(llamaConfigJson(policy.config, config), null, 2));
  const net = policy.net;
  const tensors = [
    ...net.specs.map((s) => ({ name: s.name, shape: s.shape, data: net.params.subarray(s.offset, s.offset + s.size) })),
    ...extraTensors,
  ];
  if (shards === 1) {
    writeFileSync(join(dir, 'model.safetensors'), safetensors(tensors, dtype));
    return dir;
  }
  const weightMap: Record<string, string> = {};
  for (let k = 0; k < shards; k++) {
    const file = `model-${String(k + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = tensors.filter((_, i) => i % shards === k);
    for (const t of part) weightMap[t.name] = file;
    writeFileSync(join(dir, file), safetensors(part, dtype));
  }
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  return dir;
}
