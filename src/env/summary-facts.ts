import type { SummaryContent } from './summary-content.ts';
import { renderSummary } from './summary-writers.ts';
import { words } from './visible-window.ts';

/** One clause the oracle would keep, and whether a summary kept it. */
export interface FactMark {
  kind: 'goal' | 'fact' | 'meta';
  clause: string;
  kept: boolean;
}

/** True when `needle`'s words occur as one contiguous run in `hay`. */
function containsRun(hay: readonly string[], needle: readonly string[]): boolean {
  if (needle.length === 0) return true;
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * Marks which of the oracle's clauses a summary kept (what `crl view` highlights): a clause counts
 * as kept when its words appear, in order and adjacent, in the summary. Word-level, because every
 * family states its clauses in words and a summary may order them freely (method §2: the summary is
 * the only memory across a compaction, so a dropped fact is lost).
 */
export function markFacts(options: { content: SummaryContent; summary: string }): FactMark[] {
  const hay = words(options.summary.replace(/,/g, ' , '));
  const mark = (kind: FactMark['kind'], clauses: readonly string[]): FactMark[] =>
    clauses.map((clause) => ({ kind, clause, kept: containsRun(hay, words(clause)) }));
  return [
    ...mark('goal', options.content.goal),
    ...mark('meta', options.content.meta),
    ...mark('fact', options.content.facts),
  ];
}

/** The oracle summary for the same clauses (what the family's oracle writer would write). */
export function oracleSummary(content: SummaryContent): string {
  return renderSummary(content);
}
