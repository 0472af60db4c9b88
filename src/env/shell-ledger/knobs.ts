import { z } from 'zod';

/**
 * shell-ledger difficulty knobs (docs/tasks.md). An episode reads parts minParts..maxParts of a
 * change log (chosen per seed), so a share of tasks fits one context window and the rest needs
 * one to three compactions at the family's rollout config (method §8).
 */
export const shellLedgerKnobs = z
  .object({
    minParts: z.number().int().min(1).max(40).default(3),
    maxParts: z.number().int().min(1).max(40).default(13),
    /** Lines per part file (changes and comments). */
    linesPerPart: z.number().int().min(1).max(8).default(4),
    /** Distinct settings in play. */
    keys: z.number().int().min(2).max(10).default(8),
    /** Share of lines that unset a live setting. */
    unsetRate: z.number().min(0).max(1).default(0.15),
    /** Share of lines that are comments. */
    commentRate: z.number().min(0).max(1).default(0.25),
  })
  .strict()
  .refine((k) => k.minParts <= k.maxParts, { message: 'minParts must be <= maxParts' })
  .refine((k) => k.unsetRate + k.commentRate < 1, { message: 'unsetRate + commentRate must be < 1' });

export type ShellLedgerKnobs = z.infer<typeof shellLedgerKnobs>;

/** Held-out knob combinations, never used in training (method §8). */
export const shellLedgerVariants: Record<string, Partial<ShellLedgerKnobs>> = {
  'long-log': { minParts: 14, maxParts: 16 },
  'busy-parts': { linesPerPart: 6, commentRate: 0.1 },
};
