import { mixSeed, Rng } from '../util/random.ts';

/**
 * Per-task horizons (docs/tasks.md, "Task lengths"). A family knob pair `min..max` makes each task
 * draw its length (chunks, route, hops) uniformly from that range, so that a share of tasks fits
 * one context window and the rest needs one to three compactions, as the paper's benchmarks do
 * (method §8). The draw uses its own stream of the task seed: the task's other random choices are
 * the same as those of a fixed-length task of the drawn length, and a range of one value (min =
 * max, the `fixed-horizon` variants) gives exactly the tasks of the fixed-length generator.
 */
const HORIZON_SALT = 0x4a0e;

export function drawHorizon(options: { salt: number; seed: number; min: number; max: number }): number {
  const { min, max } = options;
  if (!(Number.isInteger(min) && Number.isInteger(max) && min <= max))
    throw new Error(`drawHorizon needs integers min <= max, got ${min}..${max}`);
  if (min === max) return max;
  return min + new Rng(mixSeed(options.salt, options.seed, HORIZON_SALT)).int(max - min + 1);
}
