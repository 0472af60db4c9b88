import { z } from 'zod';

/**
 * hop-search difficulty knobs (docs/tasks.md). Defaults are sized so the median expert episode
 * needs 2–3.5 windows at C = 256 (docs/decisions/0006-task-design.md). The refinement keeps the
 * oracle summary (questions, chain facts, open candidates) within L_sum = 48 tokens.
 */
export const hopSearchKnobs = z
  .object({
    docs: z.number().int().min(2).max(40).default(14),
    factsPerDoc: z.number().int().min(1).max(4).default(2),
    hops: z.number().int().min(1).max(4).default(2),
    questions: z.number().int().min(1).max(3).default(2),
    /** Extra facts about the entities on the question chains (they make searches ambiguous). */
    distractors: z.number().int().min(0).max(30).default(14),
  })
  .strict()
  // Worst case: every question (2 hops + 2 words), all but one chain fact (3 words), one search
  // with 6 ids, and the ' , ' separators.
  .refine((k) => k.questions * (2 * k.hops + 3) + (k.questions * k.hops - 1) * 4 + 10 <= 48, {
    message: 'questions x hops too large: the oracle summary would exceed 48 tokens (e.g. questions 2 with hops <= 3)',
  })
  .refine((k) => k.docs * k.factsPerDoc >= k.questions * k.hops + k.distractors, {
    message: 'docs x factsPerDoc must hold every chain fact and distractor',
  });

export type HopSearchKnobs = z.infer<typeof hopSearchKnobs>;

/** Held-out knob combinations, never used in training (issue 5). */
export const hopSearchVariants: Record<string, Partial<HopSearchKnobs>> = {
  'one-more-hop': { hops: 3 },
  'more-docs': { docs: 20, distractors: 20 },
  'single-question': { questions: 1, hops: 4 },
};
