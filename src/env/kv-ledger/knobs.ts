import { z } from 'zod';

/**
 * kv-ledger difficulty knobs (docs/tasks.md). Task lengths are drawn per task from minChunks..chunks:
 * at C = 256, T_comp = 112, 43% of the expert's episodes fit one window and the rest need two or
 * three (docs/tasks.md, "Task lengths").
 * Caps keep every observation <= 32 tokens, the answer <= 12, and the oracle summary <= 48.
 */
export const kvLedgerKnobs = z
  .object({
    /** The longest stream, in chunks; each task draws its length from minChunks..chunks (src/env/horizon.ts). */
    chunks: z.number().int().min(1).max(60).default(12),
    /** The shortest stream. 1..12 at C = 256: 43% of tasks fit one window, the rest two or three (docs/tasks.md). */
    minChunks: z.number().int().min(1).max(60).default(1),
    /** Operations per chunk (set / del / filler). */
    chunkOps: z.number().int().min(1).max(7).default(4),
    /** Distinct keys in play; at most this many are live at once. */
    keys: z.number().int().min(2).max(10).default(8),
    /** Share of ops that re-set a live key. 0 by default: the embedded base never learned "latest of several" (docs/tasks.md). */
    overwriteRate: z.number().min(0).max(1).default(0),
    deleteRate: z.number().min(0).max(1).default(0.15),
    fillerRate: z.number().min(0).max(1).default(0.25),
    queries: z.number().int().min(1).max(8).default(1),
    /** Where the queries are shown: in the instruction, or only after the last chunk. */
    queryPosition: z.enum(['start', 'end']).default('start'),
    /**
     * Write values as words (`set h apple`, src/env/value-words.ts) instead of numbers (`set h 34`).
     * For subword tokenizers, where a number is several tokens the embedded model did not learn to
     * copy (docs/tasks.md, "Value words"); the word vocabulary has no value words.
     */
    valueWords: z.boolean().default(false),
  })
  .strict()
  .refine((k) => k.minChunks <= k.chunks, { message: 'minChunks must be <= chunks' })
  .refine((k) => k.queries <= k.keys, { message: 'queries must be <= keys' })
  .refine((k) => k.overwriteRate + k.deleteRate + k.fillerRate <= 1, {
    message: 'overwriteRate + deleteRate + fillerRate must be <= 1',
  });

export type KvLedgerKnobs = z.infer<typeof kvLedgerKnobs>;

/** Held-out knob combinations, never used in training (method §8). */
export const kvLedgerVariants: Record<string, Partial<KvLedgerKnobs>> = {
  'queries-end': { queryPosition: 'end' },
  'long-horizon': { minChunks: 15, chunks: 15 },
  'dense-writes': { overwriteRate: 0.5, deleteRate: 0.05, fillerRate: 0.05 },
  /** The default before per-task lengths: 11 chunks, every task ~3 windows (no task fits one). */
  'fixed-horizon': { minChunks: 11, chunks: 11 },
};
