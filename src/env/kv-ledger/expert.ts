import type { Slip } from '../family.ts';
import type { TextPolicy } from '../../contracts/index.ts';
import { NUMBERS } from '../../words/vocab.ts';
import { slipAnswerWord } from '../slip.ts';
import type { SummaryContent } from '../summary-content.ts';
import { isLetterWord, isNumberWord, readWindow, type VisibleWindow } from '../visible-window.ts';
import { isValueWord, VALUE_WORDS } from '../value-words.ts';

/** A value as the stream writes it: a number 0..63, or a value word (the valueWords knob). */
const isValue = (w: string | undefined): boolean => isNumberWord(w) || isValueWord(w);

/** What the expert knows from the visible window alone. */
export interface KvLedgerState {
  queries: string[] | null; // null: the goal is not visible (never seen, or lost in a summary)
  values: Map<string, string>; // live keys -> latest value
  ended: boolean; // 'end' seen: every chunk has been read
  lastObservationEnd: boolean; // the newest observation is a bare 'end' (no queries to learn)
  keyedAnswer: boolean; // a value word was seen: answer each key before its value (valueWords knob)
}

/**
 * Scans words for `set K V`, `del K`, `queries K…` and `end`. Summaries use the same clauses, so
 * the head (instruction or summary) and the observations are read by one parser, in time order.
 * set/del are last-writer-wins, so tail steps repeated after a compaction are harmless.
 */
export function readKvLedger(w: VisibleWindow): KvLedgerState {
  const s: KvLedgerState = {
    queries: null,
    values: new Map(),
    ended: false,
    lastObservationEnd: false,
    keyedAnswer: false,
  };
  const scan = (ws: readonly string[]): void => {
    for (let i = 0; i < ws.length; i++) {
      const x = ws[i];
      if (x === 'set' && isLetterWord(ws[i + 1]) && isValue(ws[i + 2])) {
        s.values.set(ws[i + 1]!, ws[i + 2]!);
        if (isValueWord(ws[i + 2])) s.keyedAnswer = true;
      } else if (x === 'del' && isLetterWord(ws[i + 1])) s.values.delete(ws[i + 1]!);
      else if (x === 'end') s.ended = true;
      else if (x === 'queries') {
        const q: string[] = [];
        for (let j = i + 1; isLetterWord(ws[j]); j++) q.push(ws[j]!);
        if (q.length > 0) s.queries = q;
      }
    }
  };
  scan(w.head);
  for (const st of w.steps) if (st.observation) scan(st.observation);
  const last = w.steps[w.steps.length - 1]?.observation;
  s.lastObservationEnd = last !== undefined && last !== null && last.length === 1 && last[0] === 'end';
  return s;
}

/**
 * Reads until the end, then answers each query with its latest value ('none' if deleted/unset);
 * with value words, each value after its key (`answer t throne`, docs/tasks.md "Value words").
 */
export function kvLedgerAct(s: KvLedgerState): string {
  if (s.ended && s.queries) {
    const value = (q: string) => s.values.get(q) ?? 'none';
    return `answer ${s.queries.map((q) => (s.keyedAnswer ? `${q} ${value(q)}` : value(q))).join(' ')}`;
  }
  if (s.ended && s.lastObservationEnd) return 'answer none'; // the queries are lost for good
  return 'read';
}

/**
 * The oracle's facts: the queries (goal) and the values of the queried keys — or, while the
 * queries are still unknown (queryPosition 'end'), of every live key — plus 'end' once seen.
 */
export function kvLedgerNeeded(w: VisibleWindow): SummaryContent {
  const s = readKvLedger(w);
  const keys = s.queries ?? [...s.values.keys()].sort();
  const facts = keys.filter((k) => s.values.has(k)).map((k) => `set ${k} ${s.values.get(k)}`);
  if (s.ended) facts.push('end');
  return { goal: s.queries ? [`queries ${s.queries.join(' ')}`] : [], facts, meta: [] };
}

/** Expert policy; asked for a summary (q_sum), it writes the oracle summary. */
export const kvLedgerExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = kvLedgerNeeded(w);
    return [...c.goal, ...c.facts].join(' , ');
  }
  return kvLedgerAct(readKvLedger(w));
};

/**
 * The demonstrator's slip (src/env/slip.ts): one value of the answer is wrong, another key's value
 * in view where there is one (else any value of the same kind). `answer none` has no slip.
 */
export const kvLedgerSlip: Slip = (action, messages, rng) =>
  slipAnswerWord({
    action,
    isAnswerWord: isValue,
    seen: () => readKvLedger(readWindow(messages)).values.values(),
    universe: (correct) => (isValueWord(correct) ? VALUE_WORDS : NUMBERS),
    rng,
  });
