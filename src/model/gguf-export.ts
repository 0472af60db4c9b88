import { ropeFrequencies } from '../tensor/rope.ts';
import { headDim, type ModelConfig } from './config.ts';
import { encodeGguf, kv, type GgmlTensorType, type GgufTensor, type GgufValue } from './gguf-file.ts';
import { toInterleavedRopeRows } from './rope-permute.ts';

/**
 * A policy's weights (Hugging Face LlamaForCausalLM names, as in model.safetensors) as a GGUF file
 * that llama.cpp runs with the `llama` architecture: the metadata keys and tensor names of
 * llama.cpp's convert_hf_to_gguf.py (LlamaModel) and gguf-py's constants. q_proj and k_proj rows
 * are reordered into llama.cpp's interleaved RoPE layout (rope-permute.ts).
 *
 * `f16` stores matrices as half floats and keeps the 1-D norm weights in f32, as the converter
 * does (general.file_type 1 = MOSTLY_F16); `f32` stores everything as is (file_type 0).
 */
export type GgufPrecision = 'f32' | 'f16';

/** Weights by Hugging Face name; shapes as in safetensors (outermost first). */
export type NamedWeights = ReadonlyMap<string, { shape: readonly number[]; data: Float32Array }>;

export interface GgufExportOptions {
  cfg: ModelConfig;
  weights: NamedWeights;
  /** Tokenizer keys (gguf-vocab.ts); they must describe cfg.vocabSize tokens. */
  vocab: Readonly<Record<string, GgufValue>>;
  precision: GgufPrecision;
  /** general.name. */
  name: string;
}

const ARCH = 'llama';

function get(weights: NamedWeights, name: string): { shape: readonly number[]; data: Float32Array } {
  const t = weights.get(name);
  if (!t) throw new Error(`GGUF export: the checkpoint has no tensor ${name}`);
  return t;
}

export function ggufMetadata(cfg: ModelConfig, precision: GgufPrecision, name: string): Record<string, GgufValue> {
  const d = headDim(cfg);
  return {
    'general.architecture': kv.str(ARCH),
    'general.name': kv.str(name),
    'general.file_type': kv.u32(precision === 'f32' ? 0 : 1),
    [`${ARCH}.vocab_size`]: kv.u32(cfg.vocabSize),
    [`${ARCH}.context_length`]: kv.u32(cfg.maxSeqLen),
    [`${ARCH}.embedding_length`]: kv.u32(cfg.dModel),
    [`${ARCH}.block_count`]: kv.u32(cfg.nLayers),
    [`${ARCH}.feed_forward_length`]: kv.u32(cfg.mlpHidden),
    [`${ARCH}.attention.head_count`]: kv.u32(cfg.nHeads),
    [`${ARCH}.attention.head_count_kv`]: kv.u32(cfg.nHeads),
    [`${ARCH}.attention.key_length`]: kv.u32(d),
    [`${ARCH}.attention.value_length`]: kv.u32(d),
    [`${ARCH}.rope.dimension_count`]: kv.u32(d),
    [`${ARCH}.rope.freq_base`]: kv.f32(cfg.ropeTheta),
    [`${ARCH}.attention.layer_norm_rms_epsilon`]: kv.f32(cfg.normEps),
    ...ropeScalingMetadata(cfg),
  };
}

/**
 * RoPE scaling as the converter writes it: linear and yarn as `rope.scaling.*` keys; llama3 as a
 * `rope_freqs` tensor of per-frequency divisors (ropeFreqsTensor), with no scaling type.
 */
function ropeScalingMetadata(cfg: ModelConfig): Record<string, GgufValue> {
  const s = cfg.ropeScaling;
  if (!s || s.type === 'llama3') return {};
  const keys: Record<string, GgufValue> = {
    [`${ARCH}.rope.scaling.type`]: kv.str(s.type),
    [`${ARCH}.rope.scaling.factor`]: kv.f32(s.factor),
  };
  if (s.type === 'yarn') {
    keys[`${ARCH}.rope.scaling.original_context_length`] = kv.u32(s.originalMaxPositions);
    keys[`${ARCH}.rope.scaling.yarn_beta_fast`] = kv.f32(s.betaFast);
    keys[`${ARCH}.rope.scaling.yarn_beta_slow`] = kv.f32(s.betaSlow);
  }
  return keys;
}

/** llama3 scaling: llama.cpp divides each base frequency by rope_freqs[i]. [D/2] */
function ropeFreqsTensor(cfg: ModelConfig): GgufTensor | null {
  if (cfg.ropeScaling?.type !== 'llama3') return null;
  const d = headDim(cfg);
  const base = ropeFrequencies({ headDim: d, theta: cfg.ropeTheta }).freqs;
  const scaled = ropeFrequencies({ headDim: d, theta: cfg.ropeTheta, scaling: cfg.ropeScaling }).freqs;
  const data = Float32Array.from(base, (f, i) => f / scaled[i]!);
  return { name: 'rope_freqs.weight', shape: [d / 2], data, type: 'F32' };
}

/** [GGUF name, HF name] for every tensor, in the order the converter writes them. */
function tensorNames(cfg: ModelConfig): [string, string][] {
  const names: [string, string][] = [['token_embd.weight', 'model.embed_tokens.weight']];
  for (let l = 0; l < cfg.nLayers; l++) {
    const hf = `model.layers.${l}.`;
    const gg = `blk.${l}.`;
    names.push(
      [`${gg}attn_norm.weight`, `${hf}input_layernorm.weight`],
      [`${gg}attn_q.weight`, `${hf}self_attn.q_proj.weight`],
      [`${gg}attn_k.weight`, `${hf}self_attn.k_proj.weight`],
      [`${gg}attn_v.weight`, `${hf}self_attn.v_proj.weight`],
      [`${gg}attn_output.weight`, `${hf}self_attn.o_proj.weight`],
      [`${gg}ffn_norm.weight`, `${hf}post_attention_layernorm.weight`],
      [`${gg}ffn_gate.weight`, `${hf}mlp.gate_proj.weight`],
      [`${gg}ffn_up.weight`, `${hf}mlp.up_proj.weight`],
      [`${gg}ffn_down.weight`, `${hf}mlp.down_proj.weight`],
    );
  }
  names.push(['output_norm.weight', 'model.norm.weight']);
  // Tied embeddings: llama.cpp reuses token_embd when `output` is absent.
  if (!cfg.tiedEmbeddings) names.push(['output.weight', 'lm_head.weight']);
  return names;
}

export function ggufTensors(cfg: ModelConfig, weights: NamedWeights, precision: GgufPrecision): GgufTensor[] {
  const d = headDim(cfg);
  const freqs = ropeFreqsTensor(cfg);
  const tensors = tensorNames(cfg).map(([gg, hf]): GgufTensor => {
    const t = get(weights, hf);
    let data = t.data;
    if (gg.endsWith('attn_q.weight') || gg.endsWith('attn_k.weight'))
      data = toInterleavedRopeRows({ w: data, heads: t.shape[0]! / d, headDim: d, cols: t.shape[1]! });
    const type: GgmlTensorType = precision === 'f16' && t.shape.length === 2 ? 'F16' : 'F32';
    return { name: gg, shape: t.shape, data, type };
  });
  return freqs ? [...tensors, freqs] : tensors;
}

export function exportGguf(options: GgufExportOptions): Buffer {
  const { cfg, weights, vocab, precision, name } = options;
  return encodeGguf({
    metadata: { ...ggufMetadata(cfg, precision, name), ...vocab },
    tensors: ggufTensors(cfg, weights, precision),
  });
}
