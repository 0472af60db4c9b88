import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { applyOp, chunkText, generateKvLedger } from './generate.ts';
import type { KvLedgerKnobs } from './knobs.ts';
import { valueText } from '../value-words.ts';
import type { ChatMessage } from '../../contracts/index.ts';
import { kvLedgerExpert } from './expert.ts';

/**
 * Dense warm-up text for kv-ledger (docs/sft.md, "Dense warm-up in crl sft"). Two forms (after the
 * family-independent recall stage, src/env/recall-form.ts): episode (episodeForm, a summaryShare of
 * the sequences) and this lookup form: one real stream from the generator, then many supervised lookups of the latest
 * values, as
 *   answer probes   `, query e answer` → `14`            (the answer action's lookup)
 *   summary probes  `<user> queries e h <eot>` q_sum → `queries e h , set e 14 , end` <eot>
 *                   (the oracle summary's format: kvLedgerNeeded, deleted keys left out)
 * An episode gives one or two such lookups; recall was only learned with ~100 per optimizer step
 * (bench/probe-recall.ts), and self summaries stayed empty of values without the summary form.
 * The stream stops before `end` half of the time, so `end` in a summary means "seen", as in episodes.
 */
export function kvLedgerDense(options: {
  rng: Rng;
  knobs: KvLedgerKnobs;
  maxChunks: number;
  probes: number;
  summaryShare: number;
  answerShare?: number;
}): DensePart[] {
  const { rng, knobs } = options;
  if (rng.next() < options.summaryShare) return episodeForm(options);
  const chunks = 1 + rng.int(Math.max(1, options.maxChunks));
  const task = generateKvLedger(rng.int(1_000_000), { ...knobs, chunks, queries: 1 });
  const live = new Map<string, number>();
  const pool = new Set<string>();
  const stream: string[] = [];
  task.chunks.forEach((ops, c) => {
    stream.push(chunkText(c, ops, knobs.valueWords));
    for (const op of ops) {
      if (op.kind !== 'filler') pool.add(op.key);
      applyOp(live, op);
    }
  });
  pool.add(task.queries[0]!); // a never-written key answers 'none'
  const ended = rng.next() < 0.5;
  if (ended) stream.push('end');
  const parts: DensePart[] = [{ kind: 'context', text: stream.join(' ') }];
  const keys = [...pool];
  for (let p = 0; p < options.probes; p++) {
    if (rng.next() < 0.5) {
      const asked = rng.shuffle([...keys]).slice(0, 1 + rng.int(Math.min(2, keys.length)));
      parts.push(
        { kind: 'context', text: `queries ${asked.join(' ')}` },
        { kind: 'summary', text: oracleSummary(asked, live, ended, knobs.valueWords) },
      );
    } else {
      const k = rng.pick(keys);
      const value = live.has(k) ? valueText(live.get(k)!, knobs.valueWords) : 'none';
      // With value words the answer names its key first, as the expert's does (`answer t throne`).
      parts.push(
        { kind: 'context', text: `, query ${k} answer` },
        { kind: 'target', text: knobs.valueWords ? `${k} ${value}` : value },
      );
    }
  }
  return parts;
}

/**
 * Episode form: the chat of a kv-ledger window (instruction with 1-3 queries, then `read` / chunk
 * turns, half the time the final `end`) closed by one summary request, answered by the oracle
 * summary. Same token layout as a real window at its first compaction, where the queried keys
 * (those untouched longest) were written several chunks back: the long-range lookup a summary
 * needs. (Summary requests after every ~2 chunks taught only short lookups and copying from the
 * previous summary: first-summary value accuracy on real windows stayed 0, docs/sft.md.)
 */
function episodeForm(options: {
  rng: Rng;
  knobs: KvLedgerKnobs;
  maxChunks: number;
  answerShare?: number;
}): DensePart[] {
  const { rng, knobs } = options;
  // 1-3 queries. (1..keys queries, d7 in docs/sft.md, learned to copy the key letters and left the
  // values at a uniform guess; the following episode SFT then failed to learn the answer too.)
  const queries = 1 + rng.int(Math.min(3, knobs.keys));
  const chunks = Math.ceil(options.maxChunks / 2) + rng.int(Math.floor(options.maxChunks / 2) + 1);
  const task = generateKvLedger(rng.int(1_000_000), { ...knobs, chunks, queries, queryPosition: 'start' });
  const live = new Map<string, number>();
  const parts: DensePart[] = [
    { kind: 'instruction', text: `read all , then answer . queries ${task.queries.join(' ')}` },
  ];
  task.chunks.forEach((ops, c) => {
    parts.push({ kind: 'action', text: 'read' }, { kind: 'observation', text: chunkText(c, ops, knobs.valueWords) });
    for (const op of ops) applyOp(live, op);
  });
  // No draw without answerShare, so the forms stay the same sequences they were before it.
  const answers = (options.answerShare ?? 0) > 0 && rng.next() < options.answerShare!;
  const ended = answers || rng.next() < 0.5;
  if (ended) parts.push({ kind: 'action', text: 'read' }, { kind: 'observation', text: 'end' });
  if (answers) parts.push({ kind: 'reply', text: kvLedgerExpert(chatOf(parts), rng) });
  else parts.push({ kind: 'summary', text: oracleSummary(task.queries, live, ended, knobs.valueWords) });
  return parts;
}

/** The chat an episode form's parts stand for, as the expert reads it. */
function chatOf(parts: readonly DensePart[]): ChatMessage[] {
  return parts.map((p) => ({
    role: p.kind === 'instruction' ? 'user' : p.kind === 'action' ? 'assistant' : 'observation',
    content: p.text,
  }));
}

/** The oracle's summary for `queries` (the expert's clauses): `queries t e , set t 14 , end`. */
function oracleSummary(
  queries: readonly string[],
  live: ReadonlyMap<string, number>,
  ended: boolean,
  valueWords: boolean,
): string {
  const facts = queries.filter((k) => live.has(k)).map((k) => `set ${k} ${valueText(live.get(k)!, valueWords)}`);
  return [`queries ${queries.join(' ')}`, ...facts, ...(ended ? ['end'] : [])].join(' , ');
}
