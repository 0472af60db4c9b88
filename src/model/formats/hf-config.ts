import { z } from 'zod';
import type { RopeScaling } from '../../tensor/rope.ts';
import { headDim, kvHeads, MODEL_FIELD_MAX, parseModelConfig, type ModelConfig } from '../network/config.ts';
import { CheckpointFormatError } from './safetensors.ts';

/**
 * Hugging Face config.json <-> ModelConfig, for LlamaForCausalLM (what checkpoints write) and, on
 * read, Qwen3ForCausalLM. Extra keys are allowed on read (unlike our own configs) because files
 * written by transformers carry many we do not use; every key that changes the computation is
 * checked, and one the engine cannot run is an error that names it.
 */
const RopeScalingSchema = z.looseObject({
  rope_type: z.string().optional(),
  type: z.string().optional(),
});

/** A size field, bounded as our own config's field is (network/config.ts MODEL_FIELD_MAX), so the error names config.json's key. */
const size = (ours: keyof typeof MODEL_FIELD_MAX) =>
  z
    .number()
    .int()
    .positive()
    .max(MODEL_FIELD_MAX[ours], { error: `must be at most ${MODEL_FIELD_MAX[ours]}` });

const HfConfigSchema = z.looseObject({
  architectures: z.array(z.string()).min(1),
  model_type: z.string().optional(),
  hidden_size: size('dModel'),
  num_hidden_layers: size('nLayers'),
  num_attention_heads: size('nHeads'),
  num_key_value_heads: size('nKvHeads').nullish(),
  head_dim: size('headDim').nullish(),
  intermediate_size: size('mlpHidden'),
  vocab_size: size('vocabSize'),
  rms_norm_eps: z.number().positive(),
  rope_theta: z.number().positive().optional(),
  /** transformers >= 5 moves rope_theta and the scaling here. */
  rope_parameters: RopeScalingSchema.extend({ rope_theta: z.number().positive().optional() }).nullish(),
  rope_scaling: RopeScalingSchema.nullish(),
  max_position_embeddings: size('maxSeqLen'),
  tie_word_embeddings: z.boolean().optional(),
  hidden_act: z.string().optional(),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().optional(),
  use_sliding_window: z.boolean().optional(),
  layer_types: z.array(z.string()).optional(),
  partial_rotary_factor: z.number().optional(),
});

/** The architectures read, with the class names transformers writes. */
export const HF_ARCHITECTURES = { LlamaForCausalLM: 'llama', Qwen3ForCausalLM: 'qwen3' } as const;
export type HfArchitecture = (typeof HF_ARCHITECTURES)[keyof typeof HF_ARCHITECTURES];

/**
 * Qwen3 is Llama with a per-head RMSNorm on q and k (qkNorm); both may use grouped-query attention
 * and a head_dim apart from hidden_size / num_attention_heads. Keys at their Llama defaults are
 * not written, so a plain multi-head model's config.json is unchanged.
 */
export function toHfConfig(cfg: ModelConfig): Record<string, unknown> {
  const d = headDim(cfg);
  return {
    architectures: [hfArchitectureName(cfg)],
    model_type: cfg.qkNorm ? 'qwen3' : 'llama',
    hidden_size: cfg.dModel,
    num_hidden_layers: cfg.nLayers,
    num_attention_heads: cfg.nHeads,
    num_key_value_heads: kvHeads(cfg),
    ...(d * cfg.nHeads !== cfg.dModel || cfg.qkNorm ? { head_dim: d } : {}),
    intermediate_size: cfg.mlpHidden,
    vocab_size: cfg.vocabSize,
    rms_norm_eps: cfg.normEps,
    rope_theta: cfg.ropeTheta,
    max_position_embeddings: cfg.maxSeqLen,
    tie_word_embeddings: cfg.tiedEmbeddings,
    rope_scaling: cfg.ropeScaling ? hfRopeScaling(cfg.ropeScaling) : null,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    torch_dtype: 'float32',
  };
}

/** The transformers class config.json names for cfg. */
export function hfArchitectureName(cfg: ModelConfig): 'Qwen3ForCausalLM' | 'LlamaForCausalLM' {
  return cfg.qkNorm ? 'Qwen3ForCausalLM' : 'LlamaForCausalLM';
}

/** The architecture config.json names, or an error naming `architectures`. */
export function hfArchitecture(raw: { architectures: string[] }, what: string): HfArchitecture {
  for (const a of raw.architectures)
    if (a in HF_ARCHITECTURES) return HF_ARCHITECTURES[a as keyof typeof HF_ARCHITECTURES];
  throw new CheckpointFormatError(
    `${what}: architectures ${JSON.stringify(raw.architectures)} is not supported; supported: ${Object.keys(HF_ARCHITECTURES).join(', ')}`,
  );
}

function unsupported(what: string, field: string, detail: string): never {
  throw new CheckpointFormatError(`${what}: ${field} ${detail}`);
}

/** The attention shape in config.json's own keys, so an error names the key to look at. */
function checkHeads({ h, what }: { h: z.infer<typeof HfConfigSchema>; what: string }): void {
  const heads = h.num_attention_heads;
  const kv = h.num_key_value_heads ?? heads;
  if (heads % kv !== 0)
    unsupported(
      what,
      'num_key_value_heads',
      `${kv} does not divide num_attention_heads ${heads} (each key/value head serves a whole group)`,
    );
  if (h.head_dim !== undefined && h.head_dim !== null) {
    if (h.head_dim % 2 !== 0) unsupported(what, 'head_dim', `${h.head_dim} must be even (RoPE rotates pairs)`);
  } else if (h.hidden_size % heads !== 0)
    unsupported(
      what,
      'hidden_size',
      `${h.hidden_size} is not a multiple of num_attention_heads ${heads} (and no head_dim)`,
    );
  else if ((h.hidden_size / heads) % 2 !== 0)
    unsupported(what, 'hidden_size', `/ num_attention_heads = ${h.hidden_size / heads} must be an even head size`);
  if (h.partial_rotary_factor !== undefined && h.partial_rotary_factor !== 1)
    unsupported(
      what,
      'partial_rotary_factor',
      `${h.partial_rotary_factor} is not supported (RoPE on whole heads only)`,
    );
}

export function parseHfConfig(raw: unknown, what = 'config.json'): { cfg: ModelConfig; architecture: HfArchitecture } {
  const r = HfConfigSchema.safeParse(raw);
  if (!r.success)
    throw new CheckpointFormatError(
      `${what}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  const h = r.data;
  const architecture = hfArchitecture(h, what);
  const heads = h.num_attention_heads;
  if (h.hidden_act !== undefined && h.hidden_act !== 'silu')
    unsupported(what, 'hidden_act', `${h.hidden_act} is not supported (silu only)`);
  if (h.attention_bias) unsupported(what, 'attention_bias', 'true is not supported (no attention biases)');
  if (h.mlp_bias) unsupported(what, 'mlp_bias', 'true is not supported (no MLP biases)');
  if (h.use_sliding_window) unsupported(what, 'use_sliding_window', 'true is not supported (full attention only)');
  const sliding = h.layer_types?.find((t) => t !== 'full_attention');
  if (sliding)
    unsupported(what, 'layer_types', `contains ${JSON.stringify(sliding)}; only full_attention is supported`);
  const kv = h.num_key_value_heads ?? heads;
  const d = h.head_dim ?? undefined;
  checkHeads({ h, what });
  const ropeScaling = parseRopeScaling(h.rope_scaling ?? h.rope_parameters, h.max_position_embeddings, what);
  const ropeTheta = h.rope_theta ?? h.rope_parameters?.rope_theta ?? 10000;
  try {
    return {
      architecture,
      cfg: parseModelConfig({
        vocabSize: h.vocab_size,
        dModel: h.hidden_size,
        nLayers: h.num_hidden_layers,
        nHeads: heads,
        mlpHidden: h.intermediate_size,
        maxSeqLen: h.max_position_embeddings,
        // LlamaConfig's and Qwen3Config's default.
        tiedEmbeddings: h.tie_word_embeddings ?? false,
        ropeTheta,
        normEps: h.rms_norm_eps,
        ...(ropeScaling ? { ropeScaling } : {}),
        ...(kv !== heads ? { nKvHeads: kv } : {}),
        ...(d !== undefined && d * heads !== h.hidden_size ? { headDim: d } : {}),
        ...(architecture === 'qwen3' ? { qkNorm: true } : {}),
      }),
    };
  } catch (e) {
    throw new CheckpointFormatError(`${what}: ${(e as Error).message}`);
  }
}

export function fromHfConfig(raw: unknown, what = 'config.json'): ModelConfig {
  return parseHfConfig(raw, what).cfg;
}

function hfRopeScaling(s: RopeScaling): Record<string, unknown> {
  switch (s.type) {
    case 'linear':
      return { rope_type: 'linear', factor: s.factor };
    case 'llama3':
      return {
        rope_type: 'llama3',
        factor: s.factor,
        low_freq_factor: s.lowFreqFactor,
        high_freq_factor: s.highFreqFactor,
        original_max_position_embeddings: s.originalMaxPositions,
      };
    case 'yarn':
      return {
        rope_type: 'yarn',
        factor: s.factor,
        original_max_position_embeddings: s.originalMaxPositions,
        beta_fast: s.betaFast,
        beta_slow: s.betaSlow,
      };
  }
}

const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);

/**
 * `rope_scaling` (or transformers 5's `rope_parameters`) as the engine's RopeScaling, with
 * transformers' defaults; what llama.cpp cannot reproduce is an error naming the key: dynamic NTK
 * and longrope scaling, and yarn's attention_factor / mscale / truncate (llama.cpp derives the
 * attention factor from `factor` alone).
 */
function parseRopeScaling(
  raw: Record<string, unknown> | null | undefined,
  maxPositions: number,
  what: string,
): RopeScaling | undefined {
  const type = raw?.rope_type ?? raw?.type;
  if (!raw || type === undefined || type === 'default') return undefined;
  const field = (k: string) => `rope_scaling.${k}`;
  const factor = num(raw.factor);
  if (factor === undefined || factor <= 0) unsupported(what, field('factor'), 'must be a positive number');
  const original = num(raw.original_max_position_embeddings);
  if (type === 'linear') return { type: 'linear', factor };
  if (type === 'llama3')
    return {
      type: 'llama3',
      factor,
      lowFreqFactor: num(raw.low_freq_factor) ?? 1,
      highFreqFactor: num(raw.high_freq_factor) ?? 4,
      originalMaxPositions: original ?? 8192,
    };
  if (type === 'yarn') {
    for (const k of ['attention_factor', 'mscale', 'mscale_all_dim'])
      if (raw[k] !== undefined && raw[k] !== null)
        unsupported(what, field(k), 'is not supported (llama.cpp derives the yarn attention factor from factor alone)');
    if (raw.truncate === false) unsupported(what, field('truncate'), 'false is not supported');
    return {
      type: 'yarn',
      factor,
      originalMaxPositions: original ?? maxPositions,
      betaFast: num(raw.beta_fast) ?? 32,
      betaSlow: num(raw.beta_slow) ?? 1,
    };
  }
  return unsupported(
    what,
    field('rope_type'),
    `${JSON.stringify(type)} is not supported; supported: default, linear, llama3, yarn (what llama.cpp runs)`,
  );
}
