import type { Slip } from '../family.ts';
import type { TextPolicy } from '../../contracts/index.ts';
import { LETTERS } from '../../words/vocab.ts';
import { slipAnswerWord } from '../slip.ts';
import type { SummaryContent } from '../summary-content.ts';
import { isLetterWord, isNumberWord, readWindow, type VisibleWindow } from '../visible-window.ts';
import { questionText } from './generate.ts';
import { isRelation } from './relations.ts';

interface Question {
  entity: string;
  rels: string[]; // in the order they are taken
}

/** What the expert knows from the visible window alone (docs/tasks.md, hop-search). */
export interface HopSearchState {
  questions: Question[] | null;
  /** Per question: the newest hop resolved in view (index into rels) and its value. */
  progress: ({ hop: number; value: string } | null)[];
  /** Per question: its answer, once known (its last hop in view, or a summary's `found v`). */
  answers: (string | null)[];
  /** `found v` clauses of a summary, in order (also when the questions were lost). */
  found: string[];
  /** The newest step, if it was a search with results: the pair searched and the ids. */
  results: { subject: string; rel: string; ids: number[] } | null;
}

/** `question E R1 R2 … [answer]` clauses, deduplicated (with resume.includeTask both the instruction and the summary state them). */
function readQuestions(ws: readonly string[]): Question[] {
  const out: Question[] = [];
  for (let i = 0; i < ws.length; i++) {
    if (ws[i] !== 'question' || !isLetterWord(ws[i + 1])) continue;
    const rels: string[] = [];
    for (let j = i + 2; isRelation(ws[j]); j++) rels.push(ws[j]!);
    if (rels.length > 0 && !out.some((q) => q.entity === ws[i + 1] && q.rels.join(' ') === rels.join(' ')))
      out.push({ entity: ws[i + 1]!, rels });
  }
  return out;
}

/**
 * Rebuilds the state. Documents are read by their headline fact (`doc N : S R V . …`): a document
 * opened from a search holds the searched fact first. Because every relation belongs to one hop of
 * one question, a headline's relation says which hop it resolves. The newest document in view
 * therefore says where the search stands, and tail steps repeated after a compaction change
 * nothing. The summary carries the questions and, for questions already answered, `found v`.
 */
export function readHopSearch(w: VisibleWindow): HopSearchState {
  const questions = readQuestions(w.head);
  const s: HopSearchState = {
    questions: questions.length > 0 ? questions : null,
    progress: questions.map(() => null),
    answers: questions.map(() => null),
    found: [],
    results: null,
  };
  for (let i = 0; i < w.head.length; i++)
    if (w.head[i] === 'found' && isLetterWord(w.head[i + 1])) s.found.push(w.head[i + 1]!);
  s.found.slice(0, questions.length).forEach((a, i) => (s.answers[i] = a));
  for (const st of w.steps) {
    const obs = st.observation ?? [];
    const [verb, subject, rel] = st.action;
    s.results = null;
    if (verb === 'search' && isLetterWord(subject) && isRelation(rel) && obs[0] === 'results') {
      const ids: number[] = [];
      for (let j = 1; isNumberWord(obs[j]); j++) ids.push(Number(obs[j]));
      s.results = { subject: subject!, rel: rel!, ids };
    }
    if (
      verb === 'open' &&
      obs[0] === 'doc' &&
      obs[2] === ':' &&
      isLetterWord(obs[3]) &&
      isRelation(obs[4]) &&
      isLetterWord(obs[5])
    ) {
      const qi = questions.findIndex((q) => q.rels.includes(obs[4]!));
      if (qi < 0) continue;
      const hop = questions[qi]!.rels.indexOf(obs[4]!);
      s.progress[qi] = { hop, value: obs[5]! };
      if (hop === questions[qi]!.rels.length - 1) s.answers[qi] = obs[5]!;
    }
  }
  return s;
}

/** The next (entity, relation) to search for question qi. */
function nextHop(s: HopSearchState, qi: number): { entity: string; rel: string } {
  const q = s.questions![qi]!;
  const p = s.progress[qi];
  return p ? { entity: p.value, rel: q.rels[p.hop + 1]! } : { entity: q.entity, rel: q.rels[0]! };
}

/**
 * Hop by hop: open the hit of the search just made, else search the next hop of the first
 * unanswered question, and answer when all are answered. Each decision is a copy (the id after
 * `results`, the headline's value, the question's start) or one lookup keyed by the headline's
 * relation (what follows it in the question: the next relation or `answer`).
 */
export function hopSearchAct(s: HopSearchState): string {
  // A summary that lost the questions but kept what was found: answer that.
  if (!s.questions) return s.found.length > 0 ? `answer ${s.found.join(' ')}` : 'answer none';
  const qi = s.answers.findIndex((a) => a === null);
  if (qi < 0) return `answer ${s.answers.join(' ')}`;
  const { entity, rel } = nextHop(s, qi);
  const r = s.results;
  if (r && r.subject === entity && r.rel === rel && r.ids.length > 0) return `open ${r.ids[0]}`;
  return `search ${entity} ${rel}`;
}

/**
 * The oracle's facts: the questions (goal) and the answers found so far, `found v` in question
 * order (a finished question's last document may be gone from the rebuilt window). Where the
 * search stands is not kept: the tail's newest document shows it (each hop is a search and an
 * open, so the last two steps always hold one). Without `found` for the last question (its
 * document is in the tail) the base answered after the first compaction instead of searching on
 * (docs/decisions/0030); with it, `found` marks "answer now".
 */
export function hopSearchNeeded(w: VisibleWindow): SummaryContent {
  const s = readHopSearch(w);
  if (!s.questions) return { goal: [], facts: [], meta: [] };
  const known = s.answers.findIndex((a) => a === null);
  const facts = s.answers.slice(0, known < 0 ? undefined : known).map((a) => `found ${a}`);
  return { goal: s.questions.map(questionText), facts, meta: [] };
}

export const hopSearchExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = hopSearchNeeded(w);
    return [...c.goal, ...c.facts].join(' , ');
  }
  return hopSearchAct(readHopSearch(w));
};

/**
 * The demonstrator's slip (src/env/slip.ts): one answer is a wrong entity, one the opened documents
 * show where there is one (else any letter). `answer none` has no slip.
 */
export const hopSearchSlip: Slip = (action, messages, rng) =>
  slipAnswerWord({
    action,
    isAnswerWord: isLetterWord,
    seen: () => readWindow(messages).steps.flatMap((st) => (st.observation ?? []).filter(isLetterWord)),
    universe: () => LETTERS,
    rng,
  });
