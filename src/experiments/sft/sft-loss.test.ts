import { describe, expect, it } from 'vitest';
import { modelConfig } from '../../model/network/config.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../../model/network/test-helpers.ts';
import { Rng } from '../../util/random.ts';
import { answerLoss, maskedNll } from './sft-loss.ts';

function setup() {
  const cfg = modelConfig('tiny');
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
  scrambleWeights(policy.net, 3);
  const tokens = randomSequences({ rng: new Rng(2), lengths: [7, 11], cfg });
  const masks = tokens.map((t, k) => Uint8Array.from(t, (_, i) => (i % (k + 2) === 1 ? 1 : 0)));
  return { policy, tokens, masks };
}

describe('maskedNll', () => {
  it('sums -log p over the supervised positions only', () => {
    const { policy, tokens, masks } = setup();
    const { logprobs } = policy.forward(tokens);
    let want = 0;
    let n = 0;
    logprobs.forEach((lp, k) =>
      lp.forEach((x, t) => {
        if (masks[k]![t] === 1) {
          want -= x;
          n++;
        }
      }),
    );
    const r = maskedNll({ policy, tokens, masks, grad: false });
    expect(r.count).toBe(n);
    expect(r.nllSum).toBeCloseTo(want, 9);
  });

  it('its gradient is the mean NLL gradient: one step along it lowers the loss', () => {
    const { policy, tokens, masks } = setup();
    const before = maskedNll({ policy, tokens, masks, grad: true });
    policy.step();
    const after = maskedNll({ policy, tokens, masks, grad: false });
    expect(after.nllSum / after.count).toBeLessThan(before.nllSum / before.count);
  });

  it('adds into running totals, and a batch with nothing supervised runs nothing', () => {
    const { policy, tokens, masks } = setup();
    const totals = { nllSum: 0, confident: 0, count: 0 };
    maskedNll({ policy, tokens: [tokens[0]!], masks: [masks[0]!], grad: false, totals });
    maskedNll({ policy, tokens: [tokens[1]!], masks: [masks[1]!], grad: false, totals });
    const all = maskedNll({ policy, tokens, masks, grad: false });
    expect(totals.count).toBe(all.count);
    expect(totals.nllSum).toBeCloseTo(all.nllSum, 5);
    const none = maskedNll({ policy, tokens, masks: masks.map((m) => new Uint8Array(m.length)), grad: true });
    expect(none).toEqual({ nllSum: 0, confident: 0, count: 0 });
  });

  it('answerLoss is the same loss on answer positions', () => {
    const { policy, tokens, masks } = setup();
    const batch = tokens.map((t, k) => ({ tokens: t, answerAt: [...masks[k]!.keys()].filter((i) => masks[k]![i]) }));
    const r = maskedNll({ policy, tokens, masks, grad: false });
    expect(answerLoss({ policy, batch, grad: false }).loss).toBe(r.nllSum / r.count);
  });
});
