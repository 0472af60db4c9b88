import type { PolicyModel } from '../../model/network/policy.ts';

/**
 * The supervised loss, one implementation for the episode SFT (sft.ts), the dense warm-up
 * (dense-warmup.ts) and the probes in bench/: cross-entropy on the supervised positions only (the
 * generated tokens, method §3 loss masks), averaged over them.
 */

/** Sums over the supervised positions of a batch; mean NLL = nllSum / count. */
export interface MaskedNll {
  /** Sum of -log p(token) over supervised positions. */
  nllSum: number;
  /** Supervised positions with p > 0.5 (which implies the token is the argmax). */
  confident: number;
  /** Supervised positions. */
  count: number;
}

/**
 * Forward over `tokens` and the NLL of the positions whose mask is 1; with grad: true also
 * backpropagates the mean NLL of this batch (dL/dlogprob = -1/N at each of its N supervised
 * positions) into the policy's gradient buffers; the caller takes the optimizer step. The sums are
 * added into `totals` when given (an epoch's running sums, in position order) and returned. A batch
 * without supervised positions runs nothing.
 */
export function maskedNll(options: {
  policy: PolicyModel;
  tokens: readonly Int32Array[]; // [B][T_b]
  masks: readonly Uint8Array[]; // [B][T_b], 1 = supervised
  grad: boolean;
  totals?: MaskedNll;
}): MaskedNll {
  const { policy, masks } = options;
  const totals = options.totals ?? { nllSum: 0, confident: 0, count: 0 };
  const n = masks.reduce((a, m) => a + m.reduce((x, y) => x + y, 0), 0);
  if (n === 0) return totals;
  const { logprobs } = policy.forward(options.tokens, { train: options.grad });
  const grads = logprobs.map((lp, k) => {
    const g = new Float32Array(lp.length);
    for (let t = 0; t < lp.length; t++) {
      if (masks[k]![t] !== 1) continue;
      g[t] = -1 / n;
      totals.nllSum -= lp[t]!;
      if (lp[t]! > Math.log(0.5)) totals.confident++;
      totals.count++;
    }
    return g;
  });
  if (options.grad) policy.backward({ logprobs: grads });
  return totals;
}

/** A probe sequence whose loss counts only some positions (the dense warm-up and the probes in bench/). */
export interface Example {
  tokens: Int32Array; // [T]
  answerAt: number[]; // ascending positions t whose token is a supervised answer (trainable.ts convention)
}

/** The supervised positions of an example as a loss mask. */
export function exampleMask(e: Example): Uint8Array {
  const mask = new Uint8Array(e.tokens.length);
  for (const t of e.answerAt) mask[t] = 1;
  return mask;
}

/** Mean answer NLL and p > 0.5 accuracy of a batch of examples; with grad: true also backpropagates the mean NLL. */
export function answerLoss({ policy, batch, grad }: { policy: PolicyModel; batch: Example[]; grad: boolean }): {
  loss: number;
  acc: number;
} {
  const r = maskedNll({ policy, tokens: batch.map((e) => e.tokens), masks: batch.map(exampleMask), grad });
  return { loss: r.nllSum / r.count, acc: r.confident / r.count };
}
