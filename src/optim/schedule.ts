import type { OptimizerConfig } from './config.ts';

/**
 * Learning rate at optimizer step `step` (0-based): linear warm-up to lr over warmupSteps, then a
 * cosine to lr * minLrRatio at totalSteps, flat afterwards.
 */
export function learningRate(
  cfg: Pick<OptimizerConfig, 'lr' | 'warmupSteps' | 'totalSteps' | 'minLrRatio'>,
  step: number,
): number {
  const { lr, warmupSteps, totalSteps, minLrRatio } = cfg;
  if (step < warmupSteps) return (lr * (step + 1)) / warmupSteps;
  const span = Math.max(1, totalSteps - warmupSteps);
  const progress = Math.min(1, (step - warmupSteps) / span);
  const minLr = lr * minLrRatio;
  return minLr + 0.5 * (lr - minLr) * (1 + Math.cos(Math.PI * progress));
}
