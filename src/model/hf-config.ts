import { z } from 'zod';
import { parseModelConfig, type ModelConfig } from './config.ts';

/**
 * Hugging Face LlamaForCausalLM config.json <-> ModelConfig. Extra keys are allowed on read
 * (unlike our own configs) because files written by transformers carry many we do not use;
 * the ones that change the architecture are checked.
 */
const HfLlamaConfigSchema = z.object({
  architectures: z.array(z.string()),
  hidden_size: z.number().int().positive(),
  num_hidden_layers: z.number().int().positive(),
  num_attention_heads: z.number().int().positive(),
  num_key_value_heads: z.number().int().positive().optional(),
  intermediate_size: z.number().int().positive(),
  vocab_size: z.number().int().positive(),
  rms_norm_eps: z.number().positive(),
  rope_theta: z.number().positive(),
  max_position_embeddings: z.number().int().positive(),
  tie_word_embeddings: z.boolean(),
  hidden_act: z.string().optional(),
  rope_scaling: z.unknown().optional(),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().optional(),
});

export function toHfConfig(cfg: ModelConfig): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: cfg.dModel,
    num_hidden_layers: cfg.nLayers,
    num_attention_heads: cfg.nHeads,
    num_key_value_heads: cfg.nHeads,
    intermediate_size: cfg.mlpHidden,
    vocab_size: cfg.vocabSize,
    rms_norm_eps: cfg.normEps,
    rope_theta: cfg.ropeTheta,
    max_position_embeddings: cfg.maxSeqLen,
    tie_word_embeddings: cfg.tiedEmbeddings,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    torch_dtype: 'float32',
  };
}

export function fromHfConfig(raw: unknown, what = 'config.json'): ModelConfig {
  const r = HfLlamaConfigSchema.safeParse(raw);
  if (!r.success)
    throw new Error(
      `${what}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  const h = r.data;
  if (!h.architectures.includes('LlamaForCausalLM'))
    throw new Error(`${what}: architectures ${JSON.stringify(h.architectures)} do not include LlamaForCausalLM`);
  if (h.num_key_value_heads !== undefined && h.num_key_value_heads !== h.num_attention_heads)
    throw new Error(
      `${what}: grouped-query attention (num_key_value_heads ${h.num_key_value_heads} != num_attention_heads ${h.num_attention_heads}) is not supported`,
    );
  if (h.hidden_act !== undefined && h.hidden_act !== 'silu')
    throw new Error(`${what}: hidden_act ${h.hidden_act} is not supported (silu only)`);
  if (h.rope_scaling !== undefined && h.rope_scaling !== null)
    throw new Error(`${what}: rope_scaling is not supported`);
  if (h.attention_bias || h.mlp_bias) throw new Error(`${what}: attention/MLP biases are not supported`);
  return parseModelConfig({
    vocabSize: h.vocab_size,
    dModel: h.hidden_size,
    nLayers: h.num_hidden_layers,
    nHeads: h.num_attention_heads,
    mlpHidden: h.intermediate_size,
    maxSeqLen: h.max_position_embeddings,
    tiedEmbeddings: h.tie_word_embeddings,
    ropeTheta: h.rope_theta,
    normEps: h.rms_norm_eps,
  });
}
