import { encodeResumeTurn, type ChatLayout } from './chat-layout.ts';
import type { RolloutConfig } from './config.ts';
import type { CompactionEvent } from './record.ts';
import { chooseTailSteps, ContextWindow, copyStep } from './window.ts';

/**
 * A compaction (method §2): the window that replaces the old one once its summary is sampled, and
 * the event the episode records for it. The episode (episode.ts) decides when to compact and keeps
 * the summary's segment.
 */
export function compactWindow(options: {
  layout: ChatLayout;
  config: RolloutConfig;
  /** The task turn u, carried over when resume.includeTask is on. */
  taskTurn: readonly number[];
  old: ContextWindow;
  /** The summary S as the next window holds it. */
  summaryIds: readonly number[];
  /** The event's numbers: this compaction's (1-based), the steps taken, the summary's generated tokens. */
  compaction: number;
  afterStep: number;
  summaryTokens: number;
}): { window: ContextWindow; event: CompactionEvent } {
  const { layout, config: c, old } = options;
  // h' = s ⊕ [u] ⊕ u_resume(S) ⊕ whole tail steps, shrunk oldest first (method §2).
  const head = [
    ...layout.systemTurn,
    ...(c.resume.includeTask ? options.taskTurn : []),
    ...encodeResumeTurn(layout, options.summaryIds),
  ];
  const kept = chooseTailSteps({
    headLength: head.length,
    window: old,
    tailSteps: c.tailSteps,
    contextWindow: c.contextWindow,
    compactThreshold: c.compactThreshold,
  });
  const next = new ContextWindow();
  next.pushContext(head);
  const firstKept = old.stepCount - kept;
  for (let s = firstKept; s < old.stepCount; s++) copyStep(old, s, next);
  return {
    window: next,
    event: {
      kind: 'compaction',
      compaction: options.compaction,
      afterStep: options.afterStep,
      windowTokensBefore: old.length,
      windowTokensAfter: next.length,
      summaryTokens: options.summaryTokens,
      tailStepsKept: kept,
      tailStepsDropped: Math.min(c.tailSteps, old.stepCount) - kept,
    },
  };
}
