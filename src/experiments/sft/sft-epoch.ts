import type { PolicyModel } from '../../model/network/policy.ts';
import { buildMinibatches } from '../../rl/minibatches.ts';
import type { Rng } from '../../util/random.ts';
import type { SftSequence } from './sft-data.ts';
import { maskedNll, type MaskedNll } from './sft-loss.ts';

/** One pass of cross-entropy over generated tokens (sft-loss.ts), one optimizer step per minibatch. */
export function sftEpoch(options: {
  policy: PolicyModel;
  segments: readonly SftSequence[];
  batchTokens: number;
  rng: Rng;
}): Record<string, number> {
  const { policy, segments } = options;
  const totals: MaskedNll = { nllSum: 0, confident: 0, count: 0 };
  let lr = Number.NaN;
  for (const mb of buildMinibatches({
    lengths: segments.map((s) => s.tokens.length),
    tokenBudget: options.batchTokens,
    rng: options.rng,
  })) {
    const before = totals.count;
    maskedNll({
      policy,
      tokens: mb.map((i) => segments[i]!.tokens),
      masks: mb.map((i) => segments[i]!.mask),
      grad: true,
      totals,
    });
    if (totals.count === before) continue; // nothing supervised: no step
    lr = policy.step().lr;
  }
  const { nllSum, confident, count } = totals;
  return {
    'sft/loss': count ? nllSum / count : Number.NaN,
    'sft/token_acc_p50': count ? confident / count : Number.NaN,
    'sft/lr': lr,
  };
}
