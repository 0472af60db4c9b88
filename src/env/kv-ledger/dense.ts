import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { generateKvLedger, opText } from './generate.ts';
import type { KvLedgerKnobs } from './knobs.ts';

/**
 * Dense warm-up text for kv-ledger (docs/sft.md, "Dense-lookup warm-up"): one real stream from the
 * generator, then many supervised lookups of the latest values, in two forms:
 *   answer probes   `, query e answer` → `14`            (the answer action's lookup)
 *   summary probes  `<user> queries e h <eot>` q_sum → `queries e h , set e 14 , end` <eot>
 *                   (the oracle summary's format: kvLedgerNeeded, deleted keys left out)
 * An episode gives one or two such lookups; recall was only learned with ~100 per optimizer step
 * (bench/probe-recall.ts), and self summaries stayed empty of values without the summary form.
 * The stream stops before `end` half of the time, so `end` in a summary means "seen", as in episodes.
 */
export function kvLedgerDense(options: { rng: Rng; knobs: KvLedgerKnobs; maxChunks: number; probes: number; summaryShare: number }): DensePart[] {
  const { rng, knobs } = options;
  const chunks = 1 + rng.int(Math.max(1, options.maxChunks));
  const task = generateKvLedger(rng.int(1_000_000), { ...knobs, chunks, queries: 1 });
  const live = new Map<string, number>();
  const pool = new Set<string>();
  const stream: string[] = [];
  task.chunks.forEach((ops, c) => {
    stream.push(`chunk ${c + 1} : ${ops.map(opText).join(' , ')}`);
    for (const op of ops) {
      if (op.kind === 'filler') continue;
      pool.add(op.key);
      if (op.kind === 'set') live.set(op.key, op.value);
      else live.delete(op.key);
    }
  });
  pool.add(task.queries[0]!); // a never-written key answers 'none'
  const ended = rng.next() < 0.5;
  if (ended) stream.push('end');
  const parts: DensePart[] = [{ kind: 'context', text: stream.join(' ') }];
  const keys = [...pool];
  for (let p = 0; p < options.probes; p++) {
    if (rng.next() < options.summaryShare) {
      const asked = rng.shuffle([...keys]).slice(0, 1 + rng.int(Math.min(2, keys.length)));
      const facts = asked.filter((k) => live.has(k)).map((k) => `set ${k} ${live.get(k)}`);
      const summary = [`queries ${asked.join(' ')}`, ...facts, ...(ended ? ['end'] : [])].join(' , ');
      parts.push({ kind: 'context', text: `queries ${asked.join(' ')}` }, { kind: 'summary', text: summary });
    } else {
      const k = rng.pick(keys);
      parts.push({ kind: 'context', text: `, query ${k} answer` }, { kind: 'target', text: live.has(k) ? String(live.get(k)) : 'none' });
    }
  }
  return parts;
}
