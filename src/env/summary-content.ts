import type { TextPolicy } from '../contracts/index.ts';

/**
 * What a family's oracle keeps at a compaction point. `goal` clauses are the task statement
 * (dropped "sometimes" by lossy writers), `facts` the state still needed, `meta` bookkeeping
 * that is never dropped (e.g. fog-courier's step counter that aligns the summary with the tail).
 */
export interface SummaryContent {
  goal: string[];
  facts: string[];
  meta: string[];
}

/** Summary writers every family provides (method §8, the Table 1 analogue). */
export interface SummaryWriters {
  /** Keeps exactly the facts still needed (and the goal). */
  oracle: TextPolicy;
  /** The oracle summary with each fact dropped with probability p, and each goal clause with probability goalP (default p / 2). */
  lossy(p: number, goalP?: number): TextPolicy;
}
