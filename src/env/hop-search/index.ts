import { verbTools } from '../action-tools.ts';
import type { TaskFamily } from '../family.ts';
import { hopSearchDense } from './dense.ts';
import { makeSummaryWriters, summaryFactsOf } from '../summary-writers.ts';
import { HopSearchEnv } from './env.ts';
import { hopSearchExpert, hopSearchNeeded, hopSearchSlip } from './expert.ts';
import { hopSearchKnobs, hopSearchVariants, type HopSearchKnobs } from './knobs.ts';

export const hopSearch: TaskFamily<HopSearchKnobs> = {
  name: 'hop-search',
  description: 'search and open generated documents to answer multi-hop questions exactly',
  knobs: hopSearchKnobs,
  variants: hopSearchVariants,
  trainSeeds: { start: 0, end: 1_000_000 },
  evalSeeds: { start: 1_000_000, end: 1_010_000 },
  create: (knobs) => new HopSearchEnv(knobs),
  expert: hopSearchExpert,
  tools: verbTools([
    {
      name: 'search',
      description: 'List the documents that state a relation of an entity.',
      words: ['search'],
      params: [
        { name: 'entity', type: 'word', description: 'the entity' },
        { name: 'relation', type: 'word', description: 'the relation' },
      ],
    },
    {
      name: 'open',
      description: 'Read a document.',
      words: ['open'],
      params: [{ name: 'doc', type: 'word', description: 'the document id' }],
    },
    {
      name: 'answer',
      description: 'Answer the question and end the task.',
      words: ['answer'],
      params: [{ name: 'values', type: 'words', description: 'the answer words' }],
    },
  ]),
  summaryWriters: makeSummaryWriters(hopSearchNeeded),
  sft: {
    slip: hopSearchSlip,
    dense: (o) => hopSearchDense(o),
  },
  summaryFacts: summaryFactsOf(hopSearchNeeded),
};

export { HopSearchEnv } from './env.ts';
export { generateHopSearch, verifyHopSearch } from './generate.ts';
export type { HopSearchTask } from './generate.ts';
export { hopSearchKnobs, hopSearchVariants } from './knobs.ts';
export type { HopSearchKnobs } from './knobs.ts';
