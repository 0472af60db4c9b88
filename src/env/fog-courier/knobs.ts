import { z } from 'zod';

/**
 * fog-courier difficulty knobs (docs/tasks.md). Route lengths are drawn per task from minRoute..route:
 * at C = 256 about half the expert's episodes fit one window, the rest need two (docs/tasks.md). A route of <= 12 moves (route <= 11) keeps
 * the way clauses (3 tokens each) and the goal inside the 48-token summary.
 */
export const fogCourierKnobs = z
  .object({
    /**
     * The longest route: each task draws r from minRoute..route (src/env/horizon.ts), then r - 1 .. r + 1
     * moves from the start room to the target room along the way the instruction gives.
     */
    route: z.number().int().min(3).max(11).default(10),
    /** The shortest route. 3..10 at C = 256: about half the tasks fit one window (docs/tasks.md). */
    minRoute: z.number().int().min(3).max(11).default(3),
    /** Exits of a room on the route besides the way back: one onward, the rest lead to side rooms. */
    branching: z.number().int().min(1).max(3).default(2),
    /** Items that are not the one to deliver, scattered over the side rooms. */
    distractors: z.number().int().min(0).max(20).default(3),
    /** Step budget = ceil((1 + slack) (moves + 2)) + 1: at 0.25 one wrong turn (there and back) fits. */
    slack: z.number().min(0).max(3).default(0.25),
  })
  .strict()
  .refine((k) => k.minRoute <= k.route, { message: 'minRoute must be <= route' });

export type FogCourierKnobs = z.infer<typeof fogCourierKnobs>;

/** Held-out knob combinations, never used in training (method §8). */
export const fogCourierVariants: Record<string, Partial<FogCourierKnobs>> = {
  'longer-route': { minRoute: 11, route: 11 },
  bushy: { branching: 3 },
  cluttered: { distractors: 10 },
  tight: { slack: 0 },
  /** The default before per-task lengths: route 9 (8..10 moves), every task 2 windows (none fits one). */
  'fixed-horizon': { minRoute: 9, route: 9 },
};
