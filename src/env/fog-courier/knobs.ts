import { z } from 'zod';

/**
 * fog-courier difficulty knobs (docs/tasks.md). Defaults are sized so the median expert episode
 * needs 2–3.5 windows at C = 256 (docs/decisions/0006-task-design.md). Rooms <= 40 and the depth
 * cap keep room ids single tokens and the oracle summary <= 48 tokens.
 */
export const fogCourierKnobs = z
  .object({
    rooms: z.number().int().min(3).max(40).default(10),
    /** Most exits a room has besides the way back (1 = a corridor). */
    branching: z.number().int().min(1).max(3).default(2),
    /** Items that are not the one to deliver, scattered over rooms. */
    distractors: z.number().int().min(0).max(20).default(3),
    /** Step budget = ceil((1 + slack) * (2 (rooms - 1) + 2 depth + 4)): a full search and return fit at slack 0. */
    slack: z.number().min(0).max(3).default(0),
    /** Deepest room (path length from the start); keeps the path facts short. */
    maxDepth: z.number().int().min(1).max(8).default(6),
  })
  .strict();

export type FogCourierKnobs = z.infer<typeof fogCourierKnobs>;

/** Held-out knob combinations, never used in training (issue 5). */
export const fogCourierVariants: Record<string, Partial<FogCourierKnobs>> = {
  'more-rooms': { rooms: 13 },
  'bushy': { branching: 3 },
  'corridors': { branching: 1, maxDepth: 8 },
  'cluttered': { distractors: 10 },
};
