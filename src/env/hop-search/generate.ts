import { LETTERS, NUMBERS } from '../../model/vocab.ts';
import { Rng, mixSeed } from '../../util/random.ts';
import type { HopSearchKnobs } from './knobs.ts';

/** Relation words (src/model/vocab.ts). Every (relation, subject) pair has at most one value. */
export const RELATIONS = ['boss', 'friend', 'pet', 'home', 'rival', 'coach'] as const;

export interface Fact {
  rel: string;
  subject: string;
  value: string;
}

export interface HopQuestion {
  rels: string[]; // as written, outermost first: `boss of pet of c` -> ['boss', 'pet']
  entity: string; // c
  answer: string;
}

export interface HopSearchTask {
  docs: { id: number; facts: Fact[] }[]; // ids ascending
  questions: HopQuestion[];
}

const FAMILY_SALT = 0x686f70;

export const factText = (f: Fact): string => `${f.rel} of ${f.subject} is ${f.value}`;
export const questionText = (q: { rels: readonly string[]; entity: string }): string =>
  ['question', ...q.rels.flatMap((r) => [r, 'of']), q.entity].join(' ');

export function generateHopSearch(seed: number, k: HopSearchKnobs): HopSearchTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const facts = new Map<string, Fact>(); // `${rel} ${subject}`
  const add = (f: Fact): void => void facts.set(`${f.rel} ${f.subject}`, f);
  const starts = rng.shuffle([...LETTERS]).slice(0, k.questions);
  const chainEntities: string[] = [];
  const questions: HopQuestion[] = starts.map((entity) => {
    const inner: string[] = []; // innermost first
    let cur = entity;
    for (let h = 0; h < k.hops; h++) {
      const rel = rng.pick(RELATIONS);
      chainEntities.push(cur);
      const existing = facts.get(`${rel} ${cur}`);
      const value = existing ? existing.value : rng.pick(LETTERS.filter((l) => l !== cur));
      if (!existing) add({ rel, subject: cur, value });
      inner.push(rel);
      cur = value;
    }
    return { rels: inner.reverse(), entity, answer: cur };
  });
  const chainCount = facts.size;
  // Distractors: other relations of the chain's own entities, so `search <entity>` lists docs
  // that do not answer the hop; then random facts fill the remaining slots.
  const total = k.docs * k.factsPerDoc;
  for (let tries = 0; facts.size < chainCount + k.distractors && tries < 1000; tries++) {
    tryAdd(rng, facts, rng.pick(chainEntities));
  }
  for (let tries = 0; facts.size < total && tries < 5000; tries++) tryAdd(rng, facts, rng.pick(LETTERS));
  const all = rng.shuffle([...facts.values()]);
  const ids = rng.shuffle(NUMBERS.map(Number)).slice(0, k.docs);
  const docs = ids.map((id, i) => ({ id, facts: all.slice(i * k.factsPerDoc, (i + 1) * k.factsPerDoc) }));
  docs.sort((a, b) => a.id - b.id);
  return { docs: docs.filter((d) => d.facts.length > 0), questions };
}

function tryAdd(rng: Rng, facts: Map<string, Fact>, subject: string): void {
  const rel = rng.pick(RELATIONS);
  if (facts.has(`${rel} ${subject}`)) return;
  facts.set(`${rel} ${subject}`, { rel, subject, value: rng.pick(LETTERS.filter((l) => l !== subject)) });
}

/** Exact verifier: one answer word per question, in order. */
export function verifyHopSearch(task: HopSearchTask, answer: readonly string[]): boolean {
  return answer.length === task.questions.length && task.questions.every((q, i) => answer[i] === q.answer);
}
