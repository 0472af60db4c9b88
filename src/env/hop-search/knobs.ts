import { z } from 'zod';
import { RELATION_COUNT } from './relations.ts';

/**
 * hop-search difficulty knobs (docs/tasks.md). Chain lengths are drawn per task from minHops..hops:
 * at C = 256, 1-2 hops fit one window and 3-5 need two or three (docs/tasks.md). Every relation is used by
 * at most one hop of all the questions, so a hop is named by its relation alone (one key): with 6
 * relation words, questions x hops <= 6, which also keeps the oracle summary (questions, chain
 * facts, one pending search) within L_sum = 48 tokens (at most 41 with its <eot>).
 */
export const hopSearchKnobs = z
  .object({
    docs: z.number().int().min(2).max(40).default(12),
    /** Facts per document: distinct relations and distinct subjects within a document (<= 6 relations). */
    factsPerDoc: z.number().int().min(1).max(RELATION_COUNT).default(6),
    /** The longest chain: each task draws its hops from minHops..hops (src/env/horizon.ts). */
    hops: z.number().int().min(1).max(RELATION_COUNT).default(5),
    /** The shortest chain. 1..5 at C = 256: 1-2 hops fit one window, 3-4 need two, 5 three (docs/tasks.md). */
    minHops: z.number().int().min(1).max(RELATION_COUNT).default(1),
    questions: z.number().int().min(1).max(3).default(1),
    /** Extra facts about the entities on the question chains (other relations than the chain's). */
    distractors: z.number().int().min(0).max(30).default(6),
  })
  .strict()
  .refine((k) => k.minHops <= k.hops, { message: 'minHops must be <= hops' })
  .refine((k) => k.questions * k.hops <= RELATION_COUNT, {
    message: `questions x hops must be <= ${RELATION_COUNT}: every hop of every question needs its own relation word`,
  })
  .refine((k) => k.docs >= k.questions * k.hops, {
    message: 'docs must be >= questions x hops (one chain fact per document)',
  })
  .refine((k) => k.docs * k.factsPerDoc >= k.questions * k.hops + k.distractors, {
    message: 'docs x factsPerDoc must hold every chain fact and distractor',
  });

export type HopSearchKnobs = z.infer<typeof hopSearchKnobs>;

/** Held-out knob combinations, never used in training (method §8). */
export const hopSearchVariants: Record<string, Partial<HopSearchKnobs>> = {
  'two-questions': { questions: 2, hops: 2 },
  'one-more-hop': { minHops: 6, hops: 6 },
  'more-docs': { docs: 20, distractors: 14 },
  /** The default before per-task lengths: 5 hops, every task 3 windows (none fits one). */
  'fixed-horizon': { minHops: 5, hops: 5 },
};
