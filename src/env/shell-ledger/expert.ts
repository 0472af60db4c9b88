import type { TextPolicy } from '../../contracts/index.ts';
import type { SummaryContent } from '../summary-content.ts';
import { isValueWord } from '../value-words.ts';
import { readWindow, type VisibleWindow } from '../visible-window.ts';
import { SETTINGS } from './generate.ts';

/**
 * What the expert knows from the visible window alone: the goal setting (from the instruction or
 * a summary), the parts read (from `cat log/part-K.txt` actions and the summary's `read R`), the
 * setting's value so far, whether it saw the log end and whether the answer was written.
 * Summaries use the words the instruction and the files use, so one scan reads both.
 */
export interface ShellLedgerState {
  key: string | null;
  read: number;
  value: string | null; // null: not known (never seen set or unset since the start or the summary)
  /** The last part was read (its `end of log` line, or the summary's `end of log` clause). */
  ended: boolean;
  answered: boolean;
  /** A `cat` failed: there is no such part (a policy read past the end). */
  pastEnd: boolean;
}

const isSetting = (w: string | undefined): w is string => w !== undefined && SETTINGS.includes(w);
const num = (w: string | undefined): number | null => (w !== undefined && /^\d+$/.test(w) ? Number(w) : null);
const isValue = (w: string | undefined): w is string => w === 'none' || isValueWord(w);
/** `end of log` starting at i. */
const endsAt = (ws: readonly string[], i: number) => ws[i] === 'end' && ws[i + 1] === 'of' && ws[i + 2] === 'log';

export function readShellLedger(w: VisibleWindow): ShellLedgerState {
  const s: ShellLedgerState = { key: null, read: 0, value: null, ended: false, answered: false, pastEnd: false };
  const head = w.head;
  for (let i = 0; i < head.length; i++) {
    const x = head[i];
    // Instruction: "... write the final setting of KEY to /app/answer.txt ..."; summary: "goal KEY".
    if (x === 'of' && head[i - 1] === 'setting' && isSetting(head[i + 1])) s.key = head[i + 1]!;
    if (x === 'goal' && isSetting(head[i + 1])) s.key = head[i + 1]!;
    // Summary clauses: "read R", "KEY = V", "end of log", "answered". The instruction's
    // "the last part ends with end of log" is not a clause: it follows "with".
    if (x === 'read' && num(head[i + 1]) !== null) s.read = Math.max(s.read, num(head[i + 1])!);
    if (isSetting(x) && head[i + 1] === '=' && isValue(head[i + 2])) s.value = head[i + 2]!;
    if (endsAt(head, i) && head[i - 1] !== 'with') s.ended = true;
    if (x === 'answered') s.answered = true;
  }
  for (const st of w.steps) {
    const a = st.action;
    const cat = a[0] === 'cat' ? /part-(\d+)\.txt$/.exec(a[1] ?? '') : null;
    if (a[0] === 'echo' && a.includes('>')) s.answered = true;
    if (!cat || !st.observation) continue;
    const o = st.observation;
    if (o.includes('No') && o.includes('such')) {
      s.pastEnd = true;
      continue;
    }
    s.read = Math.max(s.read, Number(cat[1]));
    for (let i = 0; i < o.length; i++) {
      if (o[i] === 'set' && o[i + 1] === s.key && isValue(o[i + 2])) s.value = o[i + 2]!;
      if (o[i] === 'unset' && o[i + 1] === s.key) s.value = 'none';
      if (endsAt(o, i)) s.ended = true;
    }
  }
  return s;
}

/** Read the next part; after the one that ends the log, write the answer; then submit. */
export function shellLedgerAct(s: ShellLedgerState): string {
  if (s.answered) return 'submit';
  if (s.key === null) return 'echo none > /app/answer.txt'; // the goal was lost: nothing to look up
  if (s.ended || s.pastEnd) return `echo ${s.key} ${s.value ?? 'none'} > /app/answer.txt`;
  return `cat log/part-${s.read + 1}.txt`;
}

/** The oracle's clauses: the goal, the progress, the value so far, the end (or that the answer is written). */
export function shellLedgerNeeded(w: VisibleWindow): SummaryContent {
  const s = readShellLedger(w);
  const goal = s.key !== null ? [`goal ${s.key}`] : [];
  if (s.answered) return { goal, facts: ['answered'], meta: [] };
  const facts = [`read ${s.read}`];
  if (s.key !== null && s.value !== null) facts.push(`${s.key} = ${s.value}`);
  if (s.ended) facts.push('end of log');
  return { goal, facts, meta: [] };
}

/** Expert policy; asked for a summary (q_sum), it writes the oracle summary. */
export const shellLedgerExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = shellLedgerNeeded(w);
    return [...c.goal, ...c.facts].join(' , ');
  }
  return shellLedgerAct(readShellLedger(w));
};
