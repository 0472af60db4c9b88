import type { TextPolicy } from '../family.ts';
import type { SummaryContent } from '../summary-writers.ts';
import { isLetterWord, isNumberWord, readWindow, type VisibleWindow } from '../visible-window.ts';
import { RELATIONS } from './generate.ts';

interface Question {
  rels: string[]; // outermost first
  entity: string;
}

/** What the expert knows from the visible window alone (docs/tasks.md, hop-search). */
export interface HopSearchState {
  questions: Question[] | null;
  facts: Map<string, string>; // `${rel} ${subject}` -> value
  /** The newest search per term: its ids minus the docs opened after it. */
  candidates: Map<string, number[]>;
}

const isRel = (w: string | undefined): boolean => w !== undefined && (RELATIONS as readonly string[]).includes(w);

/**
 * Scans for `question R of … of E`, facts `R of E is V` (documents) or `R E V` (the compact form
 * summaries use), and `search E results ids…`. Facts are timeless, so repeated tail steps after a
 * compaction are harmless; candidates follow time order (a newer search of a term replaces it).
 */
function scan(ws: readonly string[], s: HopSearchState, questions: Question[]): void {
  for (let i = 0; i < ws.length; i++) {
    const x = ws[i];
    if (x === 'question') {
      const rels: string[] = [];
      let j = i + 1;
      while (isRel(ws[j]) && ws[j + 1] === 'of') {
        rels.push(ws[j]!);
        j += 2;
      }
      // Deduplicated: with resume.includeTask the instruction and the summary both state them.
      const known = questions.some((q) => q.entity === ws[j] && q.rels.join(' ') === rels.join(' '));
      if (isLetterWord(ws[j]) && !known) questions.push({ rels, entity: ws[j]! });
    } else if (isRel(x) && ws[i + 1] === 'of' && isLetterWord(ws[i + 2]) && ws[i + 3] === 'is' && isLetterWord(ws[i + 4])) {
      s.facts.set(`${x} ${ws[i + 2]}`, ws[i + 4]!);
    } else if (isRel(x) && isLetterWord(ws[i + 1]) && isLetterWord(ws[i + 2])) {
      s.facts.set(`${x} ${ws[i + 1]}`, ws[i + 2]!);
    } else if (x === 'search' && isLetterWord(ws[i + 1]) && ws[i + 2] === 'results') {
      s.candidates.set(ws[i + 1]!, numbersFrom(ws, i + 3));
    }
  }
}

function numbersFrom(ws: readonly string[], i: number): number[] {
  const out: number[] = [];
  for (let j = i; isNumberWord(ws[j]); j++) out.push(Number(ws[j]));
  return out;
}

export function readHopSearch(w: VisibleWindow): HopSearchState {
  const s: HopSearchState = { questions: null, facts: new Map(), candidates: new Map() };
  const questions: Question[] = [];
  scan(w.head, s, questions);
  if (questions.length > 0) s.questions = questions;
  const opened = new Set<number>();
  for (const st of w.steps) {
    const obs = st.observation ?? [];
    const [verb, arg] = st.action;
    // A doc already opened in view needs no second look: its facts are parsed already.
    if (verb === 'search' && isLetterWord(arg) && obs[0] === 'results') s.candidates.set(arg!, numbersFrom(obs, 1).filter((id) => !opened.has(id)));
    if (verb === 'open' && obs[0] === 'doc' && isNumberWord(arg)) {
      opened.add(Number(arg));
      for (const [term, ids] of s.candidates) s.candidates.set(term, ids.filter((id) => String(id) !== arg));
    }
    scan(obs, s, []);
  }
  return s;
}

/** How far a question resolves with the known facts: the current entity and the hops left. */
export function resolve(q: Question, facts: ReadonlyMap<string, string>): { entity: string; rels: string[]; used: string[] } {
  const rels = [...q.rels];
  let entity = q.entity;
  const used: string[] = [];
  while (rels.length > 0) {
    const rel = rels[rels.length - 1]!;
    const v = facts.get(`${rel} ${entity}`);
    if (v === undefined) break;
    used.push(`${rel} ${entity} ${v}`);
    entity = v;
    rels.pop();
  }
  return { entity, rels, used };
}

/** Resolve hop by hop: search the current entity, open its results in order, answer when all resolve. */
export function hopSearchAct(s: HopSearchState): string {
  if (!s.questions) return 'answer none';
  const rs = s.questions.map((q) => resolve(q, s.facts));
  const pending = rs.find((r) => r.rels.length > 0);
  if (!pending) return `answer ${rs.map((r) => r.entity).join(' ')}`;
  const cands = s.candidates.get(pending.entity);
  return cands && cands.length > 0 ? `open ${cands[0]}` : `search ${pending.entity}`;
}

/** The oracle's facts: the questions (goal), the chain facts found so far, the pending search. */
export function hopSearchNeeded(w: VisibleWindow): SummaryContent {
  const s = readHopSearch(w);
  if (!s.questions) return { goal: [], facts: [], meta: [] };
  const rs = s.questions.map((q) => resolve(q, s.facts));
  const facts = [...new Set(rs.flatMap((r) => r.used))];
  const pending = rs.find((r) => r.rels.length > 0);
  const cands = pending ? s.candidates.get(pending.entity) : undefined;
  if (pending && cands && cands.length > 0) facts.push(`search ${pending.entity} results ${cands.join(' ')}`);
  const goal = s.questions.map((q) => ['question', ...q.rels.flatMap((r) => [r, 'of']), q.entity].join(' '));
  return { goal, facts, meta: [] };
}

export const hopSearchExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = hopSearchNeeded(w);
    return [...c.goal, ...c.facts].join(' , ');
  }
  return hopSearchAct(readHopSearch(w));
};
