/**
 * compaction-rl public API: an explicit list, grouped by layer. Each area owns its block.
 */

// --- util ---
export { Rng, mixSeed } from './util/random.ts';

// --- tensor ---
export { gemm } from './tensor/gemm.ts';
export type { GemmArgs } from './tensor/gemm.ts';

// --- model ---
export { WordTokenizer, UnknownWordError } from './model/tokenizer.ts';
export { VOCAB } from './model/vocab.ts';

// --- rl ---
export type { TrainablePolicy, TrainableCritic, PolicyForward } from './rl/trainable.ts';

// --- rollout ---
export type {
  Environment, EnvReset, EnvStep, Tokenizer, TokenSampler, SampleRequest, SampleResult,
  SamplingParams, ChatMessage,
} from './rollout/types.ts';

// --- env ---
export type { TaskFamily, TextPolicy, SummaryWriters, SeedRange } from './env/family.ts';
export { registerFamily, getFamily, familyNames } from './env/registry.ts';

// --- eval ---

// --- experiments ---
