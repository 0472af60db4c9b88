import type { Algorithm } from '../../config/train-config.ts';
import type { AdvantageEstimatorName } from '../../rl/advantage-estimators.ts';

/**
 * method §7: what each training algorithm means for the loop. A registry, not an if-chain; the
 * ablations are switches on 'compaction-rl' (config.ablation), not separate algorithms.
 */
export interface AlgorithmSpec {
  /** Advantage-estimator registry name (src/rl/advantage-estimators.ts). */
  estimator: AdvantageEstimatorName;
  /** Critic-free estimators train no critic. */
  needsCritic: boolean;
}

const ALGORITHM_SPECS: Readonly<Record<Algorithm, AlgorithmSpec>> = {
  'compaction-rl': { estimator: 'compaction-gae', needsCritic: true },
  // Same estimator; K = 1 (enforced by the config schema) makes every episode one segment.
  'ppo-single-window': { estimator: 'compaction-gae', needsCritic: true },
  broadcast: { estimator: 'broadcast', needsCritic: false },
};

export function algorithmSpec(name: string): AlgorithmSpec {
  const spec = (ALGORITHM_SPECS as Record<string, AlgorithmSpec>)[name];
  if (!spec)
    throw new Error(`unknown algorithm ${JSON.stringify(name)}; valid: ${Object.keys(ALGORITHM_SPECS).join(', ')}`);
  return spec;
}
