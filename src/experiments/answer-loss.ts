import type { PolicyModel } from '../model/policy.ts';

/** A probe sequence whose loss counts only some positions (the dense warm-up and the probes in bench/probe-*.ts). */
export interface Example {
  tokens: Int32Array; // [T]
  answerAt: number[]; // positions t whose token is a supervised answer (trainable.ts convention)
}

/** Mean answer NLL and p > 0.5 accuracy; with grad: true also backpropagates the mean NLL. */
export function answerLoss({ policy, batch, grad }: { policy: PolicyModel; batch: Example[]; grad: boolean }): {
  loss: number;
  acc: number;
} {
  const out = policy.forward(
    batch.map((e) => e.tokens),
    { train: grad },
  );
  const count = batch.reduce((s, e) => s + e.answerAt.length, 0);
  let loss = 0;
  let hits = 0;
  const gl = batch.map((e) => new Float32Array(e.tokens.length));
  batch.forEach((e, i) => {
    for (const t of e.answerAt) {
      const lp = out.logprobs[i]![t]!;
      loss -= lp;
      if (lp > Math.log(0.5)) hits++;
      gl[i]![t] = -1 / count;
    }
  });
  if (grad) policy.backward({ logprobs: gl });
  return { loss: loss / count, acc: hits / count };
}
