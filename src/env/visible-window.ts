import type { ChatMessage } from '../contracts/index.ts';

/** One (action, observation) step as the policy sees it; observation is null if not yet answered. */
export interface VisibleStep {
  action: string[]; // words of the assistant turn
  observation: string[] | null; // words of the observation turn
}

/**
 * The current window (method §2), split the way every scripted policy reads it: `head` holds the
 * words of the user turns before the first action — the instruction u in the first window, or
 * u_resume(S) after a compaction (the runtime's fixed prefix followed by the summary S).
 */
export interface VisibleWindow {
  head: string[];
  steps: VisibleStep[];
  /** The runtime appended q_sum (a user turn after the steps): the policy must write a summary. */
  summaryRequest: boolean;
}

/** Words of a text, newlines dropped: scripted policies match on words, never on layout. */
export function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w !== '');
}

/**
 * Parses a window. User turns after the first action are q_sum (method §2) and are ignored, so
 * marker words in the runtime's templates never leak into a task's state.
 */
export function readWindow(messages: readonly ChatMessage[]): VisibleWindow {
  const head: string[] = [];
  const steps: VisibleStep[] = [];
  let summaryRequest = false;
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.role === 'user') {
      if (steps.length === 0) head.push(...words(m.content));
      else summaryRequest = true;
    } else if (m.role === 'assistant') {
      steps.push({ action: words(m.content), observation: null });
      summaryRequest = false;
    } else {
      const last = steps[steps.length - 1];
      if (last && last.observation === null) last.observation = words(m.content);
      summaryRequest = false;
    }
  }
  // A q_sum before any action (compaction right after a rebuild) still comes last as a user turn.
  const lastMsg = messages[messages.length - 1];
  if (steps.length === 0 && lastMsg?.role === 'user' && messages.filter((m) => m.role === 'user').length > 1) {
    summaryRequest = true;
    head.length = 0;
    const users = messages.filter((m) => m.role === 'user');
    for (const u of users.slice(0, -1)) head.push(...words(u.content));
  }
  return { head, steps, summaryRequest };
}

export const isNumberWord = (w: string | undefined): boolean => w !== undefined && /^(\d|[1-5]\d|6[0-3])$/.test(w);
export const isLetterWord = (w: string | undefined): boolean => w !== undefined && /^[a-z]$/.test(w);
