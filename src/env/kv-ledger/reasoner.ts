import type { Reasoner } from '../../contracts/index.ts';
import { readWindow, type VisibleWindow } from '../visible-window.ts';
import { readKvLedger } from './expert.ts';

/**
 * What the kv-ledger expert thinks before it acts (the tools format with thinking on,
 * docs/agent-format.md), from the facts in its window: while reading, how far the stream is; before
 * answering, every update of each queried key in view, in order, and which one is the latest. The
 * answer's right arguments are worked out from several facts (the latest of several updates), so a
 * policy that restates them before it calls has them next to the call.
 */
export const kvLedgerReasoner: Reasoner = ({ stage, text, messages }) => {
  const w = readWindow(messages);
  if (stage === 'summarize')
    return 'The window is nearly full. I keep the queries and the latest value of each key they ask about.';
  const s = readKvLedger(w);
  if (!text.startsWith('answer')) {
    const seen = lastChunk(w);
    return seen === null
      ? 'No chunk is read yet, so I read the first one.'
      : `Chunk ${seen} is the last one I read and the stream has not ended, so I read the next one.`;
  }
  if (!s.queries) return 'Every chunk is read but the queries are lost, so I cannot know the values.';
  const lines = s.queries.map((q) => {
    const updates = updatesOf(w, q);
    if (updates.length === 0) return `${q} is never set in view, so it is none.`;
    const last = updates[updates.length - 1]!;
    return `${q} was ${updates.join(', then ')}; the latest is ${last}.`;
  });
  return `Every chunk is read. The queries are ${s.queries.join(', ')}.\n${lines.join('\n')}`;
};

/** The number of the newest `chunk N :` observation, or null. */
function lastChunk(w: VisibleWindow): string | null {
  for (let i = w.steps.length - 1; i >= 0; i--) {
    const o = w.steps[i]!.observation;
    if (o && o[0] === 'chunk') return o[1] ?? null;
  }
  return null;
}

/** The value of each `set K V` and "deleted" for each `del K` of key k in view, head first. */
function updatesOf(w: VisibleWindow, k: string): string[] {
  const out: string[] = [];
  const scan = (ws: readonly string[]) => {
    for (let i = 0; i < ws.length; i++) {
      if (ws[i] === 'set' && ws[i + 1] === k && ws[i + 2] !== undefined) out.push(ws[i + 2]!);
      else if (ws[i] === 'del' && ws[i + 1] === k) out.push('deleted');
    }
  };
  scan(w.head);
  for (const st of w.steps) if (st.observation) scan(st.observation);
  return out;
}
