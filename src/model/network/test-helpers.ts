import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import type { ModelConfig } from './config.ts';
import type { LlamaNetwork } from './network.ts';

/** Test helper: an optimizer config with no clipping or decay surprises. */
export const TEST_OPTIM: OptimizerConfig = {
  ...DEFAULT_OPTIMIZER,
  warmupSteps: 0,
  totalSteps: 100,
  gradClip: 0,
  weightDecay: 0,
};

/**
 * Test helper: replaces the 0.02-scale init with O(1) weights so logits, attention patterns and
 * gradients are far from uniform and a wrong backward cannot hide behind tiny numbers.
 */
export function scrambleWeights(net: LlamaNetwork, seed: number): void {
  const rng = new Rng(seed);
  for (const s of net.specs) {
    const t = net.params.subarray(s.offset, s.offset + s.size);
    const norm = s.name.endsWith('norm.weight');
    const scale = s.name.includes('proj') ? 1 / Math.sqrt(s.shape[1]!) : 0.5;
    for (let i = 0; i < t.length; i++) t[i] = norm ? 1 + 0.2 * rng.normal() : scale * rng.normal();
  }
}

export function randomSequences({
  rng,
  lengths,
  cfg,
}: {
  rng: Rng;
  lengths: number[];
  cfg: ModelConfig;
}): Int32Array[] {
  return lengths.map((l) => Int32Array.from({ length: l }, () => rng.int(cfg.vocabSize)));
}
