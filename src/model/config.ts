import { z } from 'zod';
import type { RopeScaling } from '../tensor/rope.ts';

/** RoPE frequency scaling (tensor/rope.ts); absent = none. */
export const RopeScalingSchema: z.ZodType<RopeScaling> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('linear'), factor: z.number().positive() }).strict(),
  z
    .object({
      type: z.literal('llama3'),
      factor: z.number().positive(),
      lowFreqFactor: z.number().positive(),
      highFreqFactor: z.number().positive(),
      originalMaxPositions: z.number().int().positive(),
    })
    .strict()
    .refine((s) => s.highFreqFactor > s.lowFreqFactor, { message: 'highFreqFactor must exceed lowFreqFactor' }),
  z
    .object({
      type: z.literal('yarn'),
      factor: z.number().positive(),
      originalMaxPositions: z.number().int().positive(),
      betaFast: z.number().positive(),
      betaSlow: z.number().positive(),
    })
    .strict(),
]);

/**
 * The transformer's shape (Llama architecture). Field names are ours; checkpoint.ts maps them to
 * Hugging Face config.json names.
 */
export const ModelConfigSchema = z
  .object({
    vocabSize: z.number().int().positive(),
    dModel: z.number().int().positive(),
    nLayers: z.number().int().positive(),
    nHeads: z.number().int().positive(),
    mlpHidden: z.number().int().positive(),
    maxSeqLen: z.number().int().positive(),
    tiedEmbeddings: z.boolean(),
    ropeTheta: z.number().positive(),
    normEps: z.number().positive(),
    ropeScaling: RopeScalingSchema.optional(),
    /** Key/value heads (grouped-query attention when below nHeads). Default nHeads. */
    nKvHeads: z.number().int().positive().optional(),
    /** Per-head size D. Default dModel / nHeads; q_proj is [nHeads * D, dModel]. */
    headDim: z.number().int().positive().optional(),
    /** RMSNorm over each q and k head before RoPE (Qwen3's q_norm / k_norm). Default false. */
    qkNorm: z.boolean().optional(),
  })
  .strict()
  .refine((c) => c.headDim !== undefined || c.dModel % c.nHeads === 0, {
    message: 'dModel must be a multiple of nHeads (or give headDim)',
  })
  .refine((c) => (c.headDim ?? c.dModel / c.nHeads) % 2 === 0, {
    message: 'the head size must be even (RoPE rotates pairs)',
  })
  .refine((c) => c.nHeads % (c.nKvHeads ?? c.nHeads) === 0, {
    message: 'nHeads must be a multiple of nKvHeads (each key/value head serves a whole group of query heads)',
  });

export type ModelConfig = z.infer<typeof ModelConfigSchema>;

const PRESETS = {
  /** For unit tests: every path exercised in milliseconds. */
  tiny: {
    vocabSize: 32,
    dModel: 16,
    nLayers: 2,
    nHeads: 2,
    mlpHidden: 32,
    maxSeqLen: 32,
    tiedEmbeddings: false,
    ropeTheta: 10000,
    normEps: 1e-5,
  },
  /** The issue's reference model (~0.8M parameters): what experiments run on. */
  reference: {
    vocabSize: 128,
    dModel: 128,
    nLayers: 4,
    nHeads: 4,
    mlpHidden: 512,
    maxSeqLen: 256,
    tiedEmbeddings: false,
    ropeTheta: 10000,
    normEps: 1e-5,
  },
  /** The reference width at 2 layers: learns associative recall far more reliably (docs/sft.md probe). */
  'reference-2l': {
    vocabSize: 128,
    dModel: 128,
    nLayers: 2,
    nHeads: 4,
    mlpHidden: 512,
    maxSeqLen: 256,
    tiedEmbeddings: false,
    ropeTheta: 10000,
    normEps: 1e-5,
  },
  large: {
    vocabSize: 128,
    dModel: 256,
    nLayers: 6,
    nHeads: 8,
    mlpHidden: 1024,
    maxSeqLen: 512,
    tiedEmbeddings: false,
    ropeTheta: 10000,
    normEps: 1e-5,
  },
} as const satisfies Record<string, ModelConfig>;

export type ModelPresetName = keyof typeof PRESETS;

export function modelPresetNames(): ModelPresetName[] {
  return Object.keys(PRESETS) as ModelPresetName[];
}

/** A preset name in a config (train, sft): an unknown name lists the valid ones. */
export const modelPresetSchema = z
  .string()
  .min(1)
  .refine((name) => name in PRESETS, {
    error: (issue) =>
      `unknown model preset ${JSON.stringify(issue.input)}; valid presets: ${modelPresetNames().join(', ')}`,
  });

/** A preset with optional overrides, validated. Unknown preset names list the valid ones. */
export function modelConfig(name: string, overrides: Partial<ModelConfig> = {}): ModelConfig {
  if (!(name in PRESETS))
    throw new Error(`unknown model preset '${name}'; valid presets: ${modelPresetNames().join(', ')}`);
  return parseModelConfig({ ...PRESETS[name as ModelPresetName], ...overrides });
}

export function parseModelConfig(raw: unknown): ModelConfig {
  const r = ModelConfigSchema.safeParse(raw);
  if (!r.success)
    throw new Error(
      `invalid model config: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  return r.data;
}

export function headDim(cfg: ModelConfig): number {
  return cfg.headDim ?? cfg.dModel / cfg.nHeads;
}

/** Key/value heads: nHeads unless the model uses grouped-query attention. */
export function kvHeads(cfg: ModelConfig): number {
  return cfg.nKvHeads ?? cfg.nHeads;
}

/**
 * The attention's widths. H = query heads, Hkv = key/value heads (H / Hkv query heads share one),
 * D = head size. A q_proj | k_proj | v_proj row is [H D | Hkv D | Hkv D] = qkvDim wide.
 */
export interface AttentionShape {
  h: number;
  hkv: number;
  d: number;
  qDim: number; // H * D, also o_proj's input
  kvDim: number; // Hkv * D
  qkvDim: number; // (H + 2 Hkv) * D
}

export function attentionShape(cfg: ModelConfig): AttentionShape {
  const h = cfg.nHeads;
  const hkv = kvHeads(cfg);
  const d = headDim(cfg);
  return { h, hkv, d, qDim: h * d, kvDim: hkv * d, qkvDim: (h + 2 * hkv) * d };
}
