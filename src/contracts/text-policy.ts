import type { ChatMessage } from './chat.ts';

/**
 * The randomness a text policy may draw on: a seeded generator (src/util/random.ts implements
 * it), so a run is reproducible from its seed. Only what policies need is named here.
 */
export interface RandomSource {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

/**
 * A text-level policy: reads the chat exactly as the policy would see it (the current window,
 * parsed into turns) and writes the next assistant turn. Scripted experts and summary writers are
 * text policies; src/rollout/text-policy-sampler.ts turns one into a TokenSampler.
 */
export type TextPolicy = (messages: readonly ChatMessage[], rng: RandomSource) => string;
