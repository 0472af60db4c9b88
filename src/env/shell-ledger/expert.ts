import type { TextPolicy } from '../family.ts';
import type { SummaryContent } from '../summary-writers.ts';
import { readWindow, type VisibleWindow } from '../visible-window.ts';
import { SETTINGS } from './generate.ts';

/**
 * What the expert knows from the visible window alone: the goal (setting and part count, from
 * the instruction or a summary), the parts read (from `cat log/part-K.txt` actions and the
 * summary's `read R`), the setting's value so far, and whether the answer was written. Summaries
 * use the clause words the instruction and the files use, so one scan reads both.
 */
export interface ShellLedgerState {
  key: string | null;
  parts: number | null;
  read: number;
  value: string | null; // null: not known (never seen set or unset since the start or the summary)
  answered: boolean;
  /** A `cat` failed: there is no such part (the part count was lost). */
  pastEnd: boolean;
}

const isSetting = (w: string | undefined): w is string => w !== undefined && SETTINGS.includes(w);
const num = (w: string | undefined): number | null => (w !== undefined && /^\d+$/.test(w) ? Number(w) : null);

export function readShellLedger(w: VisibleWindow): ShellLedgerState {
  const s: ShellLedgerState = { key: null, parts: null, read: 0, value: null, answered: false, pastEnd: false };
  const head = w.head;
  for (let i = 0; i < head.length; i++) {
    const x = head[i];
    // Instruction: "... /app/log/part-1.txt to /app/log/part-N.txt ... final value of KEY ..."
    const m = /part-(\d+)\.txt$/.exec(x ?? '');
    if (m && head[i - 1] === 'to') s.parts = Number(m[1]);
    if (x === 'of' && head[i - 1] === 'value' && isSetting(head[i + 1])) s.key = head[i + 1]!;
    // Summary clauses: "goal KEY in N parts", "read R", "KEY = V", "answered".
    if (x === 'goal' && isSetting(head[i + 1]) && head[i + 2] === 'in' && num(head[i + 3]) !== null) {
      s.key = head[i + 1]!;
      s.parts = num(head[i + 3]);
    }
    if (x === 'read' && num(head[i + 1]) !== null) s.read = Math.max(s.read, num(head[i + 1])!);
    if (isSetting(x) && head[i + 1] === '=' && head[i + 2] !== undefined) s.value = head[i + 2]!;
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
      if (o[i] === 'set' && o[i + 1] === s.key && num(o[i + 2]) !== null) s.value = o[i + 2]!;
      if (o[i] === 'unset' && o[i + 1] === s.key) s.value = 'none';
    }
  }
  return s;
}

/** Read the next part; after the last, write the answer; then submit. */
export function shellLedgerAct(s: ShellLedgerState): string {
  if (s.answered) return 'submit';
  const done = s.parts !== null ? s.read >= s.parts : s.pastEnd;
  if (done || s.key === null) return `echo ${s.key !== null ? (s.value ?? 'none') : 'none'} > /app/answer.txt`;
  return `cat log/part-${s.read + 1}.txt`;
}

/** The oracle's clauses: the goal, the progress and the value so far (or that the answer is written). */
export function shellLedgerNeeded(w: VisibleWindow): SummaryContent {
  const s = readShellLedger(w);
  const goal = s.key !== null && s.parts !== null ? [`goal ${s.key} in ${s.parts} parts`] : [];
  if (s.answered) return { goal, facts: ['answered'], meta: [] };
  const facts = [`read ${s.read}`];
  if (s.key !== null && s.value !== null) facts.push(`${s.key} = ${s.value}`);
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
