import type { PolicyModel } from '../../model/network/policy.ts';
import { packByTokens } from '../../rl/minibatches.ts';
import type { SftSequence, TokenKind } from './sft-data.ts';

/**
 * Teacher-forced accuracy on held-out expert episodes (evaluation seeds), by token kind. One wrong
 * token in the final answer fails the episode, so the whole-span rates matter more than the mean:
 * `answer_exact` is the share of answers whose every value token has p > 0.5 (so is the argmax),
 * `summary_exact` the same for whole summaries (in the tools format: the call of the `answer` tool,
 * and the summary after its thinking block; the blocks are `acc_reasoning`). p > 0.5 is a lower bound on argmax accuracy that
 * needs only the target's logprob (all the policy's forward returns).
 */
export function heldOutAccuracy(options: {
  policy: PolicyModel;
  sequences: readonly SftSequence[];
  batchTokens: number;
}): Record<string, number> {
  const { policy, sequences } = options;
  const kinds: TokenKind[] = ['action', 'answer', 'summary'];
  const hit = { none: 0, action: 0, answer: 0, summary: 0, reasoning: 0 };
  const all = { none: 0, action: 0, answer: 0, summary: 0, reasoning: 0 };
  const spans = { answer: { ok: 0, n: 0 }, summary: { ok: 0, n: 0 } };
  let nll = 0;
  let count = 0;
  for (const mb of packByTokens({ lengths: sequences.map((s) => s.tokens.length), tokenBudget: options.batchTokens })) {
    const { logprobs } = policy.forward(mb.map((i) => sequences[i]!.tokens));
    mb.forEach((i, k) => {
      const s = sequences[i]!;
      const lp = logprobs[k]!;
      let spanKind: TokenKind = 'none';
      let spanOk = true;
      const close = () => {
        if (spanKind === 'answer' || spanKind === 'summary') {
          spans[spanKind].n++;
          if (spanOk) spans[spanKind].ok++;
        }
        spanKind = 'none';
        spanOk = true;
      };
      for (let t = 0; t < s.tokens.length; t++) {
        const kind = s.kinds?.[t] ?? (s.mask[t] === 1 ? 'action' : 'none');
        if (kind !== spanKind && !(spanKind === 'answer' && kind === 'action' && s.mask[t] === 1)) close();
        if (s.mask[t] !== 1) continue;
        const ok = lp[t]! > Math.log(0.5);
        nll -= lp[t]!;
        count++;
        all[kind]++;
        if (ok) hit[kind]++;
        if (kind === 'answer' || kind === 'summary') {
          spanKind = kind;
          spanOk &&= ok;
        }
      }
      close();
    });
  }
  const out: Record<string, number> = { 'heldout/loss': count ? nll / count : Number.NaN };
  for (const k of kinds) out[`heldout/acc_${k}`] = all[k] ? hit[k] / all[k] : Number.NaN;
  // Only the tools format with thinking on has reasoning tokens; other runs keep their keys.
  if (all.reasoning > 0) out['heldout/acc_reasoning'] = hit.reasoning / all.reasoning;
  out['heldout/answer_exact'] = spans.answer.n ? spans.answer.ok / spans.answer.n : Number.NaN;
  out['heldout/summary_exact'] = spans.summary.n ? spans.summary.ok / spans.summary.n : Number.NaN;
  return out;
}
