import { kvLedgerReasoner } from './reasoner.ts';
import { verbTools } from '../action-tools.ts';
import type { TaskFamily } from '../family.ts';
import { makeSummaryWriters, summaryFactsOf } from '../summary-writers.ts';
import { kvLedgerDense } from './dense.ts';
import { KvLedgerEnv } from './env.ts';
import { kvLedgerExpert, kvLedgerNeeded, kvLedgerSlip } from './expert.ts';
import { kvLedgerKnobs, kvLedgerVariants, type KvLedgerKnobs } from './knobs.ts';

export const kvLedger: TaskFamily<KvLedgerKnobs> = {
  name: 'kv-ledger',
  description: 'read a stream of chunks of set / del / filler operations, then answer queries about the latest values',
  knobs: kvLedgerKnobs,
  variants: kvLedgerVariants,
  trainSeeds: { start: 0, end: 1_000_000 },
  evalSeeds: { start: 1_000_000, end: 1_010_000 },
  create: (knobs) => new KvLedgerEnv(knobs),
  expert: kvLedgerExpert,
  reasoner: kvLedgerReasoner,
  tools: verbTools([
    {
      name: 'read',
      description: 'Show the next chunk of the ledger (after the last one: end).',
      words: ['read'],
      params: [],
    },
    {
      name: 'answer',
      description: 'Answer the queries, in their order, and end the task.',
      words: ['answer'],
      params: [{ name: 'values', type: 'words', description: 'the answer words, in the order the queries ask' }],
    },
  ]),
  summaryWriters: makeSummaryWriters(kvLedgerNeeded),
  sft: {
    slip: kvLedgerSlip,
    dense: (o) => kvLedgerDense(o),
  },
  summaryFacts: summaryFactsOf(kvLedgerNeeded),
  subwordKnobs: { valueWords: true },
};

export { KvLedgerEnv } from './env.ts';
export { generateKvLedger, verifyKvLedger } from './generate.ts';
export type { KvLedgerTask } from './generate.ts';
export { kvLedgerKnobs, kvLedgerVariants } from './knobs.ts';
export type { KvLedgerKnobs } from './knobs.ts';
