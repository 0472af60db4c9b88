import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { resolve } from './expert.ts';
import { factText, generateHopSearch, questionText, type Fact, type HopSearchTask } from './generate.ts';
import type { HopSearchKnobs } from './knobs.ts';

/**
 * Dense warm-up text for hop-search (docs/sft.md, "hop-search lookups"). The base followed the
 * wrong entity: after opening a document it searched a letter named in a fact about another
 * relation or subject. What it must do is a lookup keyed by relation *and* subject, chained along
 * the question. Two forms, on the documents of a real generated task (chain facts and the
 * distractors about the same entities, which make a one-key lookup wrong):
 *   lookup form (1 - summaryShare): the documents read as `open` / `doc …` turns, then `probes`
 *     supervised replies to `question R of E` → `answer V`: a one-hop question whose fact is in view
 *     (the acting decision one hop at a time: the value is the next entity to search);
 *   chain form (summaryShare): the instruction's questions, the documents, then one supervised
 *     summary in the oracle's format (`question … , boss l d , rival d e`): the chain resolved as
 *     far as the documents in view allow, hop by hop.
 */
export function hopSearchDense(options: { rng: Rng; knobs: HopSearchKnobs; probes: number; summaryShare: number }): DensePart[] {
  const { rng } = options;
  const task = generateHopSearch(rng.int(1_000_000), options.knobs);
  return rng.next() < options.summaryShare ? chainForm(rng, task) : lookupForm(rng, task, options.probes);
}

/** 3–5 documents in view, the ones with chain facts first in the pool so that chains resolve often. */
function docsInView(rng: Rng, task: HopSearchTask, chain: ReadonlySet<string>): HopSearchTask['docs'] {
  const n = 3 + rng.int(3);
  const onChain = (d: HopSearchTask['docs'][number]): boolean => d.facts.some((f) => chain.has(factKey(f)));
  const withChain = rng.shuffle(task.docs.filter(onChain));
  const rest = rng.shuffle(task.docs.filter((d) => !onChain(d)));
  const pool = [...withChain.slice(0, Math.max(1, Math.ceil(n / 2))), ...rest];
  return rng.shuffle(pool.slice(0, n));
}

/** `rel subject` → value: the map the expert's `resolve` reads. */
const factKey = (f: Fact): string => `${f.rel} ${f.subject}`;
const factMap = (docs: HopSearchTask['docs']): Map<string, string> => new Map(docs.flatMap((d) => d.facts).map((f) => [factKey(f), f.value]));

/** Every question's resolved hops as `rel subject value` (expert.ts `resolve`), in the oracle's order. */
const resolvedHops = (task: HopSearchTask, facts: ReadonlyMap<string, string>): string[] => task.questions.flatMap((q) => resolve(q, facts).used);

/** Keys of the facts on the questions' chains. */
function chainKeys(task: HopSearchTask): Set<string> {
  return new Set(resolvedHops(task, factMap(task.docs)).map((h) => h.split(' ').slice(0, 2).join(' ')));
}

function readDocs(parts: DensePart[], docs: HopSearchTask['docs']): Map<string, string> {
  for (const d of docs) parts.push({ kind: 'action', text: `open ${d.id}` }, { kind: 'observation', text: `doc ${d.id} : ${d.facts.map(factText).join(' . ')}` });
  return factMap(docs);
}

function lookupForm(rng: Rng, task: HopSearchTask, probes: number): DensePart[] {
  const parts: DensePart[] = [{ kind: 'instruction', text: 'search and open docs , then answer .' }];
  const docs = docsInView(rng, task, chainKeys(task));
  readDocs(parts, docs);
  const facts = docs.flatMap((d) => d.facts);
  for (let p = 0; p < probes; p++) {
    const f = rng.pick(facts);
    parts.push({ kind: 'observation', text: questionText({ rels: [f.rel], entity: f.subject }) }, { kind: 'reply', text: `answer ${f.value}` });
  }
  return parts;
}

function chainForm(rng: Rng, task: HopSearchTask): DensePart[] {
  const parts: DensePart[] = [{ kind: 'instruction', text: `search and open docs , then answer . ${task.questions.map(questionText).join(' . ')}` }];
  const known = readDocs(parts, docsInView(rng, task, chainKeys(task)));
  // The oracle's order (hop-search/expert.ts hopSearchNeeded): questions, then each question's
  // resolved hops innermost first, deduplicated; no pending search (none is in view here).
  const goal = task.questions.map(questionText);
  parts.push({ kind: 'summary', text: [...goal, ...new Set(resolvedHops(task, known))].join(' , ') });
  return parts;
}
