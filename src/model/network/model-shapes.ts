import type { ModelConfig } from './config.ts';

/**
 * Named model shapes for generated models (formats/hf-generate.ts): the real Qwen3-0.6B's config.json
 * shape, and a small shape with the same architecture features (grouped-query attention, q/k
 * norm, tied embeddings, Qwen3's vocabulary, head size apart from width / heads) for tests, which
 * go through the same code paths in seconds.
 */
export const MODEL_SHAPES = {
  /** Qwen/Qwen3-0.6B's config.json: 0.6B parameters, 2.4 GB in f32, 1.2 GB in bf16. */
  'qwen3-0.6b': {
    vocabSize: 151936,
    dModel: 1024,
    nLayers: 28,
    nHeads: 16,
    nKvHeads: 8,
    headDim: 128,
    mlpHidden: 3072,
    maxSeqLen: 40960,
    tiedEmbeddings: true,
    ropeTheta: 1000000,
    normEps: 1e-6,
    qkNorm: true,
  },
  /** Qwen3's architecture and vocabulary at a test's size (10M parameters, 9.7M of them the embedding). */
  'qwen3-tiny': {
    vocabSize: 151936,
    dModel: 64,
    nLayers: 2,
    nHeads: 4,
    nKvHeads: 2,
    headDim: 32,
    mlpHidden: 192,
    maxSeqLen: 4096,
    tiedEmbeddings: true,
    ropeTheta: 1000000,
    normEps: 1e-6,
    qkNorm: true,
  },
} as const satisfies Record<string, ModelConfig>;

export type ModelShapeName = keyof typeof MODEL_SHAPES;
export const MODEL_SHAPE_NAMES = Object.keys(MODEL_SHAPES) as ModelShapeName[];
