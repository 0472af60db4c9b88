import { z } from 'zod';

/**
 * fog-courier difficulty knobs (docs/tasks.md). Defaults are sized so the median expert episode
 * needs 2–3.5 windows at C = 256 (docs/decisions/0006-task-design.md). A route of <= 12 moves (route <= 11) keeps
 * the way clauses (3 tokens each) and the goal inside the 48-token summary.
 */
export const fogCourierKnobs = z
  .object({
    /** Moves from the start room to the target room along the way the instruction gives (each task: route - 1 .. route + 1). */
    route: z.number().int().min(3).max(11).default(9),
    /** Exits of a room on the route besides the way back: one onward, the rest lead to side rooms. */
    branching: z.number().int().min(1).max(3).default(2),
    /** Items that are not the one to deliver, scattered over the side rooms. */
    distractors: z.number().int().min(0).max(20).default(3),
    /** Step budget = ceil((1 + slack) (moves + 2)) + 1: at 0.25 one wrong turn (there and back) fits. */
    slack: z.number().min(0).max(3).default(0.25),
  })
  .strict();

export type FogCourierKnobs = z.infer<typeof fogCourierKnobs>;

/** Held-out knob combinations, never used in training (method §8). */
export const fogCourierVariants: Record<string, Partial<FogCourierKnobs>> = {
  'longer-route': { route: 11 },
  bushy: { branching: 3 },
  cluttered: { distractors: 10 },
  tight: { slack: 0 },
};
