import { ropeFrequencies } from '../../tensor/rope.ts';
import { headDim, kvHeads, type ModelConfig } from '../network/config.ts';
import {
  encodeGguf,
  kv,
  writeGguf,
  type GgmlTensorType,
  type GgufTensor,
  type GgufValue,
  type TensorRead,
  type TensorReadF16,
} from './gguf-file.ts';
import type { LlamaNetwork } from '../network/network.ts';
import { toInterleavedRopeRows } from './rope-permute.ts';
import { CheckpointFormatError } from './safetensors.ts';

/**
 * A policy's weights (Hugging Face LlamaForCausalLM / Qwen3ForCausalLM names, as in
 * model.safetensors) as a GGUF file that llama.cpp runs: the metadata keys and tensor names of
 * llama.cpp's convert_hf_to_gguf.py (LlamaModel, Qwen3Model) and gguf-py's constants. A model
 * with q/k RMSNorm is the `qwen3` architecture (NEOX RoPE: the Hugging Face row order, plus
 * attn_q_norm / attn_k_norm); any other is `llama`, whose q_proj and k_proj rows are reordered
 * into llama.cpp's interleaved RoPE layout (rope-permute.ts). Both take grouped-query attention
 * (head_count_kv) and a head size apart from embedding_length / head_count (key_length).
 *
 * `f16` stores matrices as half floats and keeps the 1-D norm weights in f32, as the converter
 * does (general.file_type 1 = MOSTLY_F16); `f32` stores everything as is (file_type 0).
 */
export type GgufPrecision = 'f32' | 'f16';

/** One tensor of a policy: its shape and a reader of its values (a view, or a file read lazily). */
export interface WeightTensor {
  /** Outermost first, as in safetensors. */
  shape: readonly number[];
  read: TensorRead;
  /** The values as f16 bits, when the source converts more directly than through f32. */
  readF16?: TensorReadF16;
}

/** Weights by Hugging Face name. */
export type NamedWeights = ReadonlyMap<string, WeightTensor>;

/** A tensor's values all at once (a view when the reader returns one). */
export function readAll(t: WeightTensor): Float32Array {
  return t.read(
    0,
    t.shape.reduce((a, b) => a * b, 1),
  );
}

/** A network's parameters by name: views into its flat buffer, no copies. */
export function namedWeights(net: Pick<LlamaNetwork, 'specs' | 'params'>): NamedWeights {
  return new Map(
    net.specs.map((s) => [
      s.name,
      {
        shape: s.shape,
        read: (start: number, count: number) => net.params.subarray(s.offset + start, s.offset + start + count),
      },
    ]),
  );
}

export interface GgufExportOptions {
  cfg: ModelConfig;
  weights: NamedWeights;
  /** Tokenizer keys (gguf-vocab.ts); they must describe cfg.vocabSize tokens. */
  vocab: Readonly<Record<string, GgufValue>>;
  precision: GgufPrecision;
  /** general.name. */
  name: string;
}

/** The llama.cpp architecture that runs cfg (general.architecture and the key prefix). */
export function ggufArchitecture(cfg: ModelConfig): 'llama' | 'qwen3' {
  return cfg.qkNorm ? 'qwen3' : 'llama';
}

function get(weights: NamedWeights, name: string): WeightTensor {
  const t = weights.get(name);
  if (!t) throw new Error(`GGUF export: the checkpoint has no tensor ${name}`);
  return t;
}

export function ggufMetadata(cfg: ModelConfig, precision: GgufPrecision, name: string): Record<string, GgufValue> {
  const d = headDim(cfg);
  const arch = ggufArchitecture(cfg);
  return {
    'general.architecture': kv.str(arch),
    'general.name': kv.str(name),
    'general.file_type': kv.u32(precision === 'f32' ? 0 : 1),
    [`${arch}.vocab_size`]: kv.u32(cfg.vocabSize),
    [`${arch}.context_length`]: kv.u32(cfg.maxSeqLen),
    [`${arch}.embedding_length`]: kv.u32(cfg.dModel),
    [`${arch}.block_count`]: kv.u32(cfg.nLayers),
    [`${arch}.feed_forward_length`]: kv.u32(cfg.mlpHidden),
    [`${arch}.attention.head_count`]: kv.u32(cfg.nHeads),
    [`${arch}.attention.head_count_kv`]: kv.u32(kvHeads(cfg)),
    [`${arch}.attention.key_length`]: kv.u32(d),
    [`${arch}.attention.value_length`]: kv.u32(d),
    [`${arch}.rope.dimension_count`]: kv.u32(d),
    [`${arch}.rope.freq_base`]: kv.f32(cfg.ropeTheta),
    [`${arch}.attention.layer_norm_rms_epsilon`]: kv.f32(cfg.normEps),
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
  const arch = ggufArchitecture(cfg);
  const keys: Record<string, GgufValue> = {
    [`${arch}.rope.scaling.type`]: kv.str(s.type),
    [`${arch}.rope.scaling.factor`]: kv.f32(s.factor),
  };
  if (s.type === 'yarn') {
    keys[`${arch}.rope.scaling.original_context_length`] = kv.u32(s.originalMaxPositions);
    keys[`${arch}.rope.scaling.yarn_beta_fast`] = kv.f32(s.betaFast);
    keys[`${arch}.rope.scaling.yarn_beta_slow`] = kv.f32(s.betaSlow);
  }
  return keys;
}

/** llama3 scaling: llama.cpp divides each base frequency by rope_freqs[i]. [D/2] */
function ropeFreqsTensor(cfg: ModelConfig): GgufTensor | null {
  if (cfg.ropeScaling?.type !== 'llama3') return null;
  if (ggufArchitecture(cfg) !== 'llama')
    throw new CheckpointFormatError(
      "GGUF export: llama3 RoPE scaling needs llama.cpp's rope_freqs tensor, which its qwen3 architecture (q/k norm models) does not read",
    );
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
      ...(cfg.qkNorm
        ? ([
            [`${gg}attn_q_norm.weight`, `${hf}self_attn.q_norm.weight`],
            [`${gg}attn_k_norm.weight`, `${hf}self_attn.k_norm.weight`],
          ] as [string, string][])
        : []),
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
  const interleave = ggufArchitecture(cfg) === 'llama';
  const tensors = tensorNames(cfg).map(([gg, hf]): GgufTensor => {
    const t = get(weights, hf);
    const type: GgmlTensorType = precision === 'f16' && t.shape.length === 2 ? 'F16' : 'F32';
    // q/k rows reorder whole heads, so those (small) tensors are read at once; the rest stream.
    if (interleave && (gg.endsWith('attn_q.weight') || gg.endsWith('attn_k.weight'))) {
      const data = toInterleavedRopeRows({ w: readAll(t), heads: t.shape[0]! / d, headDim: d, cols: t.shape[1]! });
      return { name: gg, shape: t.shape, data, type };
    }
    return { name: gg, shape: t.shape, data: t.read, type, readF16: t.readF16 };
  });
  return freqs ? [...tensors, freqs] : tensors;
}

function ggufParts(options: GgufExportOptions): Parameters<typeof encodeGguf>[0] {
  const { cfg, weights, vocab, precision, name } = options;
  return {
    metadata: { ...ggufMetadata(cfg, precision, name), ...vocab },
    tensors: ggufTensors(cfg, weights, precision),
  };
}

/** The file in memory (tests, small models). */
export function exportGguf(options: GgufExportOptions): Buffer {
  return encodeGguf(ggufParts(options));
}

/** The file written to `path` a chunk at a time (any size); returns its bytes. */
export function writeGgufExport(path: string, options: GgufExportOptions): number {
  return writeGguf(path, ggufParts(options));
}
