/**
 * The precision the sampler keeps its weight matrices in (decision 0044). Training always keeps
 * f32 master weights; the sampler reads a copy made from them whenever they change: f32 (the
 * weights themselves, packed), or f16 / bf16 (half the bytes, widened to f32 as they are read,
 * f32 accumulation). 'auto' is f32 below HALF_PRECISION_MIN_PARAMS parameters, so the reference
 * models sample bit for bit as before, and bf16 from there up, where batch-1 decode is bound by
 * reading the weights.
 */
import { z } from 'zod';

export const WEIGHT_PRECISIONS = ['f32', 'f16', 'bf16'] as const;
export type WeightPrecision = (typeof WEIGHT_PRECISIONS)[number];

export const PRECISION_CHOICES = ['auto', ...WEIGHT_PRECISIONS] as const;
export const PrecisionChoiceSchema = z.enum(PRECISION_CHOICES, {
  error: `expected one of ${PRECISION_CHOICES.join(', ')}`,
});
export type PrecisionChoice = z.infer<typeof PrecisionChoiceSchema>;

/** Models with at least this many parameters sample with bf16 weights under 'auto'. */
export const HALF_PRECISION_MIN_PARAMS = 100_000_000;

/** Weights the chosen precision cannot hold (f16 beyond ±65504): a user error, said as such. */
export class WeightPrecisionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WeightPrecisionError';
  }
}

/** The precision `choice` means for a model of `paramCount` parameters. */
export function resolvePrecision(choice: PrecisionChoice, paramCount: number): WeightPrecision {
  if (choice !== 'auto') return choice;
  return paramCount >= HALF_PRECISION_MIN_PARAMS ? 'bf16' : 'f32';
}
