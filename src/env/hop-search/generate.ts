import { LETTERS, NUMBERS } from '../../words/vocab.ts';
import { Rng, mixSeed } from '../../util/random.ts';
import { drawHorizon } from '../horizon.ts';
import type { HopSearchKnobs } from './knobs.ts';
import { RELATIONS } from './relations.ts';

export interface Fact {
  subject: string;
  rel: string;
  value: string;
}

export interface HopQuestion {
  entity: string; // the start: `question q boss friend` starts at q
  rels: string[]; // in the order they are taken: boss of q, then friend of that one
  answer: string;
}

export interface HopSearchDoc {
  id: number;
  facts: Fact[]; // relations pairwise distinct, subjects pairwise distinct
}

export interface HopSearchTask {
  docs: HopSearchDoc[]; // ids ascending
  questions: HopQuestion[];
}

const FAMILY_SALT = 0x686f70;

/** `q boss e`: the order a fact is written in documents and summaries alike. */
export const factText = (f: Fact): string => `${f.subject} ${f.rel} ${f.value}`;
export const docText = (d: HopSearchDoc): string => `doc ${d.id} : ${d.facts.map(factText).join(' . ')}`;
/**
 * `question q boss friend answer`: start at q, take its boss, then that one's friend, then answer.
 * The closing `answer` makes "what comes after this hop's relation" one lookup in every case: the
 * next relation, or `answer`.
 */
export const questionText = (q: { entity: string; rels: readonly string[] }): string =>
  ['question', q.entity, ...q.rels, 'answer'].join(' ');
const factKey = (subject: string, rel: string): string => `${subject} ${rel}`;

/**
 * A seeded task. The relations of all questions are pairwise distinct and so are the chain's
 * entities, so every hop is named by its relation alone. Inside a document, relations and
 * subjects are pairwise distinct too: the fact a search pointed at is found by either word alone
 * (the one-key lookups the embedded model learns; a two-key lookup stayed at chance, docs/sft.md).
 * (subject, relation) is unique over the collection, so a search lists at most one document, and
 * no document holds two chain facts.
 */
export function generateHopSearch(seed: number, k: HopSearchKnobs): HopSearchTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const rels = rng.shuffle([...RELATIONS]);
  const letters = rng.shuffle([...LETTERS]);
  const used = new Set<string>(); // factKey of every fact placed
  const placed: Fact[] = [];
  const chainEntities: string[] = [];
  const questions: HopQuestion[] = [];
  const hops = drawHorizon({ salt: FAMILY_SALT, seed, min: k.minHops, max: k.hops });
  for (let q = 0; q < k.questions; q++) {
    const qRels = rels.slice(q * hops, (q + 1) * hops);
    const chain = letters.splice(0, hops + 1); // distinct entities, also across questions
    chainEntities.push(...chain);
    qRels.forEach((rel, h) => {
      placed.push({ subject: chain[h]!, rel, value: chain[h + 1]! });
      used.add(factKey(chain[h]!, rel));
    });
    questions.push({ entity: chain[0]!, rels: qRels, answer: chain[hops]! });
  }
  // Distractors: other relations of the chain's entities (a subject match alone is not enough
  // across documents); then random facts fill every slot, so documents have a fixed length.
  for (let tries = 0; placed.length < k.questions * hops + k.distractors && tries < 1000; tries++) {
    const f = randomFact(rng, rng.pick(chainEntities));
    if (!used.has(factKey(f.subject, f.rel))) {
      used.add(factKey(f.subject, f.rel));
      placed.push(f);
    }
  }
  const docs: HopSearchDoc[] = rng
    .shuffle(NUMBERS.map(Number))
    .slice(0, k.docs)
    .map((id) => ({ id, facts: [] }));
  const fits = (d: HopSearchDoc, f: Fact): boolean =>
    d.facts.length < k.factsPerDoc && d.facts.every((g) => g.rel !== f.rel && g.subject !== f.subject);
  const chainDocs = new Set<HopSearchDoc>();
  const chainFacts = new Set<Fact>(placed.slice(0, k.questions * hops));
  for (const f of placed) {
    // One chain fact per document, so every hop is one search and one open (no hop is answered
    // early by a document opened for another: the next decision never depends on that check).
    const chainFact = chainFacts.has(f);
    const open = docs.filter((d) => fits(d, f) && !(chainFact && chainDocs.has(d)));
    if (open.length === 0) throw new Error('hop-search: no document can hold a fact (knobs too tight)');
    const d = rng.pick(open);
    d.facts.push(f);
    if (chainFact) chainDocs.add(d);
  }
  for (const d of docs) {
    // Fill relation by relation (a random draw misses often when a document holds all six).
    for (const rel of rng.shuffle([...RELATIONS])) {
      if (d.facts.length >= k.factsPerDoc) break;
      if (d.facts.some((g) => g.rel === rel)) continue;
      const subject = rng
        .shuffle([...LETTERS])
        .find((x) => !used.has(factKey(x, rel)) && d.facts.every((g) => g.subject !== x));
      if (subject === undefined) continue;
      used.add(factKey(subject, rel));
      d.facts.push({ subject, rel, value: rng.pick(LETTERS.filter((l) => l !== subject)) });
    }
    rng.shuffle(d.facts);
    // The chain fact heads its document, as a search hit heads a result page: the value the hop
    // needs sits at a fixed place after `doc N :`, like fog-courier's room id in a view. With the
    // chain fact anywhere in the document the base picked a wrong fact's value (docs/decisions/0030).
    const head = d.facts.findIndex((f) => chainFacts.has(f));
    if (head > 0) d.facts.unshift(...d.facts.splice(head, 1));
  }
  docs.sort((a, b) => a.id - b.id);
  return { docs, questions };
}

function randomFact(rng: Rng, subject: string): Fact {
  return { subject, rel: rng.pick(RELATIONS), value: rng.pick(LETTERS.filter((l) => l !== subject)) };
}

/** Exact verifier: one answer word per question, in order. */
export function verifyHopSearch(task: HopSearchTask, answer: readonly string[]): boolean {
  return answer.length === task.questions.length && task.questions.every((q, i) => answer[i] === q.answer);
}
