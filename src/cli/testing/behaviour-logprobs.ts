import { expect } from 'vitest';

/**
 * The importance weights of a run at --max-staleness 1 show the sampler's behaviour log-probs
 * reached the update: on a batch sampled by the weights it trains they are 1 to float rounding
 * (sampler and trainer score the same temperature / top-p distribution), on a stale one some
 * differ from 1. Dropped log-probs would give no weights (iw_mean 0); the trainer's own in their
 * place, weights of exactly 1; log-probs of another distribution, weights away from 1 unstale.
 */
export function expectBehaviourLogprobs(
  lines: readonly { iteration: number; metrics: Record<string, number | null> }[],
): void {
  const stale = lines.filter((l) => l.metrics['rollout/staleness_max'] === 1);
  expect(stale.length, 'some batch sampled one version behind').toBeGreaterThan(0);
  for (const l of lines) {
    const m = l.metrics;
    const where = `iteration ${l.iteration}`;
    expect(m['off_policy/iw_mean'], where).toBeGreaterThan(0);
    if (m['rollout/staleness_max'] === 0) {
      expect(Math.abs(m['off_policy/iw_max']! - 1), where).toBeLessThan(1e-4);
      expect(Math.abs(m['off_policy/iw_mean']! - 1), where).toBeLessThan(1e-4);
      expect(m['policy/sampler_logprob_mismatch'], where).toBeLessThan(1e-4);
    } else expect(m['off_policy/iw_max']! - 1, where).toBeGreaterThan(1e-4);
  }
}
