import type { ChatMessage, RandomSource, TextPolicy } from '../contracts/index.ts';
import type { SummaryContent, SummaryWriters } from './summary-content.ts';
import { readWindow, type VisibleWindow } from './visible-window.ts';

/** Spec default L_sum: summaries are at most this many tokens. */
export const SUMMARY_TOKEN_LIMIT = 48;

/** Clauses joined by ' , ' — every family's parser treats ',' as an ordinary separator. */
export function renderSummary(c: SummaryContent): string {
  return [...c.goal, ...c.meta, ...c.facts].join(' , ');
}

/**
 * lossy(p): each fact dropped with probability p; each goal clause with probability goalP, by
 * default p / 2 ("sometimes the goal", docs/tasks.md). Meta clauses are kept: dropping them would
 * corrupt, not forget.
 */
export function dropClauses(c: SummaryContent, p: number, rng: RandomSource, goalP = p / 2): SummaryContent {
  return {
    goal: c.goal.filter(() => rng.next() >= goalP),
    meta: c.meta,
    facts: c.facts.filter(() => rng.next() >= p),
  };
}

/** Builds oracle and lossy(p) writers from a family's "what is still needed" function. */
export function makeSummaryWriters(needed: (w: VisibleWindow) => SummaryContent): SummaryWriters {
  const oracle: TextPolicy = (messages: readonly ChatMessage[]) => renderSummary(needed(readWindow(messages)));
  return {
    oracle,
    lossy(p: number, goalP = p / 2): TextPolicy {
      if (!(p >= 0 && p <= 1)) throw new Error(`lossy summary writer needs 0 <= p <= 1, got ${p}`);
      if (!(goalP >= 0 && goalP <= 1))
        throw new Error(`lossy summary writer needs 0 <= goal drop probability <= 1, got ${goalP}`);
      return (messages, rng) => renderSummary(dropClauses(needed(readWindow(messages)), p, rng, goalP));
    },
  };
}

/** A family's `summaryFacts` from its "what is still needed" function (the oracle's own clauses). */
export function summaryFactsOf(needed: (w: VisibleWindow) => SummaryContent) {
  return (messages: readonly ChatMessage[]): SummaryContent => needed(readWindow(messages));
}
