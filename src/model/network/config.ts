import { totalmem } from 'node:os';
import { z } from 'zod';
import type { RopeScaling } from '../../tensor/rope.ts';

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
 * Largest value of each size field: well above any released model (vocabularies reach ~262k,
 * widths 16k, depths ~130 layers, contexts ~10M), so a real checkpoint passes and a corrupt one
 * (hidden_size 1e9) is refused before anything is allocated. formats/hf-config.ts applies the same bounds
 * under config.json's names.
 */
export const MODEL_FIELD_MAX = {
  vocabSize: 1 << 22,
  dModel: 1 << 16,
  nLayers: 1024,
  nHeads: 1024,
  nKvHeads: 1024,
  headDim: 4096,
  mlpHidden: 1 << 20,
  maxSeqLen: 1 << 24,
} as const;

const size = (field: keyof typeof MODEL_FIELD_MAX) =>
  z
    .number()
    .int()
    .positive()
    .max(MODEL_FIELD_MAX[field], { error: `must be at most ${MODEL_FIELD_MAX[field]}` });

/**
 * The transformer's shape (Llama architecture). Field names are ours; formats/checkpoint.ts maps them to
 * Hugging Face config.json names.
 */
export const ModelConfigSchema = z
  .object({
    vocabSize: size('vocabSize'),
    dModel: size('dModel'),
    nLayers: size('nLayers'),
    nHeads: size('nHeads'),
    mlpHidden: size('mlpHidden'),
    maxSeqLen: size('maxSeqLen'),
    tiedEmbeddings: z.boolean(),
    ropeTheta: z.number().positive(),
    normEps: z.number().positive(),
    ropeScaling: RopeScalingSchema.optional(),
    /** Key/value heads (grouped-query attention when below nHeads). Default nHeads. */
    nKvHeads: size('nKvHeads').optional(),
    /** Per-head size D. Default dModel / nHeads; q_proj is [nHeads * D, dModel]. */
    headDim: size('headDim').optional(),
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
  })
  .superRefine((c, ctx) => {
    const problem = modelMemoryProblem(c);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** Parameters of the language model cfg describes (weights.ts lays them out; this counts them without allocating). */
export function modelParamCount(cfg: z.input<typeof ModelConfigSchema>): number {
  const d = cfg.headDim ?? cfg.dModel / cfg.nHeads;
  const q = cfg.nHeads * d;
  const kv = (cfg.nKvHeads ?? cfg.nHeads) * d;
  const layer =
    2 * cfg.dModel + cfg.dModel * (2 * q + 2 * kv) + 3 * cfg.dModel * cfg.mlpHidden + (cfg.qkNorm ? 2 * d : 0);
  return cfg.vocabSize * cfg.dModel * (cfg.tiedEmbeddings ? 1 : 2) + cfg.nLayers * layer + cfg.dModel;
}

/**
 * A loaded model holds four float32 buffers of its parameter count (weights, gradients, AdamW's m
 * and v: network.ts) and a RoPE table of maxSeqLen x headDim floats; refused when that exceeds the
 * machine's memory (os.totalmem), with the count and the fields that set it.
 */
export function modelMemoryProblem(cfg: z.input<typeof ModelConfigSchema>): string | null {
  const d = cfg.headDim ?? cfg.dModel / cfg.nHeads;
  const params = modelParamCount(cfg);
  const bytes = 16 * params + 4 * cfg.maxSeqLen * d;
  const limit = totalmem();
  if (bytes <= limit) return null;
  const gb = (b: number) => `${(b / 1e9).toPrecision(3)} GB`;
  return (
    `the model has ${params.toExponential(2)} parameters and needs about ${gb(bytes)} loaded (weights, gradients, ` +
    `optimizer state, RoPE table), more than this machine's ${gb(limit)} of memory; check vocabSize (vocab_size), ` +
    `dModel (hidden_size), nLayers (num_hidden_layers), mlpHidden (intermediate_size) and maxSeqLen (max_position_embeddings)`
  );
}

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
