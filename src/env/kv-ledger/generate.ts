import { Rng, mixSeed } from '../../util/random.ts';
import { LETTERS } from '../../words/vocab.ts';
import { drawHorizon } from '../horizon.ts';
import type { KvLedgerKnobs } from './knobs.ts';
import { valueText } from '../value-words.ts';

/** One operation in the stream, as words: `set a 5` (`set a tiger` with value words), `del a`, `filler 17`. */
export type KvOp =
  { kind: 'set'; key: string; value: number } | { kind: 'del'; key: string } | { kind: 'filler'; n: number };

export interface KvLedgerTask {
  chunks: KvOp[][]; // [chunks][chunkOps]
  queries: string[]; // keys, in answer order
  /** The expected answer words: the latest value of each queried key, or 'none'. */
  answer: string[];
  queryPosition: 'start' | 'end';
  /** Values are written as value words (the valueWords knob). */
  valueWords: boolean;
}

const FAMILY_SALT = 0x6b76; // keeps this family's streams apart from other families at equal seeds

export function opText(op: KvOp, valueWords = false): string {
  if (op.kind === 'set') return `set ${op.key} ${valueText(op.value, valueWords)}`;
  if (op.kind === 'del') return `del ${op.key}`;
  return `filler ${op.n}`;
}

/** What `read` shows for chunk index i (0-based): `chunk 3 : set a 5 , del b , filler 17`. */
export function chunkText(i: number, ops: readonly KvOp[], valueWords = false): string {
  return `chunk ${i + 1} : ${ops.map((op) => opText(op, valueWords)).join(' , ')}`;
}

/** Applies one operation to the live key -> value map (last writer wins; filler does nothing). */
export function applyOp(live: Map<string, number>, op: KvOp): void {
  if (op.kind === 'set') live.set(op.key, op.value);
  else if (op.kind === 'del') live.delete(op.key);
}

/** Seeded generator: the same (seed, knobs) always gives the same task. */
export function generateKvLedger(seed: number, k: KvLedgerKnobs): KvLedgerTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const pool = rng.shuffle([...LETTERS]).slice(0, k.keys);
  const live = new Map<string, number>();
  const everSet = new Set<string>();
  const lastTouch = new Map<string, number>(); // key -> index of the last chunk that set or deleted it
  const chunks: KvOp[][] = [];
  const length = drawHorizon({ salt: FAMILY_SALT, seed, min: k.minChunks, max: k.chunks });
  for (let c = 0; c < length; c++) {
    const ops: KvOp[] = [];
    for (let i = 0; i < k.chunkOps; i++) ops.push(nextOp({ rng, k, pool, live }));
    for (const op of ops) {
      if (op.kind !== 'filler') lastTouch.set(op.key, c);
      if (op.kind === 'set') everSet.add(op.key);
      applyOp(live, op);
    }
    chunks.push(ops);
  }
  // Query the keys untouched for longest (ties broken at random): their answers lie furthest back,
  // so they must survive compaction (method §2). Never-written keys top up the list ('none').
  const candidates = rng.shuffle([...everSet]).sort((a, b) => lastTouch.get(a)! - lastTouch.get(b)!);
  for (const key of rng.shuffle([...pool])) if (!everSet.has(key)) candidates.push(key);
  const queries = candidates.slice(0, k.queries);
  const answer = queries.map((q) => (live.has(q) ? valueText(live.get(q)!, k.valueWords) : 'none'));
  return { chunks, queries, answer, queryPosition: k.queryPosition, valueWords: k.valueWords };
}

function nextOp(o: { rng: Rng; k: KvLedgerKnobs; pool: string[]; live: Map<string, number> }): KvOp {
  const { rng, k, pool, live } = o;
  const r = rng.next();
  const liveKeys = [...live.keys()];
  const free = pool.filter((p) => !live.has(p));
  if (r < k.fillerRate) return { kind: 'filler', n: rng.int(64) };
  if (liveKeys.length > 0 && r < k.fillerRate + k.deleteRate) return { kind: 'del', key: rng.pick(liveKeys) };
  const overwrite = r < k.fillerRate + k.deleteRate + k.overwriteRate || free.length === 0;
  if (overwrite && liveKeys.length > 0) return { kind: 'set', key: rng.pick(liveKeys), value: rng.int(64) };
  return { kind: 'set', key: rng.pick(free.length > 0 ? free : pool), value: rng.int(64) };
}

/**
 * Exact verifier: the answer words must equal the expected values, in query order. With value words
 * an answer may also name each key before its value (`answer t throne`), and the keys must then be
 * the queries in order: the lookup by the key just written is the one the embedded model learns
 * (docs/tasks.md, "Value words").
 */
export function verifyKvLedger(task: KvLedgerTask, answer: readonly string[]): boolean {
  const plain = (ws: readonly string[]) => ws.length === task.answer.length && ws.every((w, i) => w === task.answer[i]);
  if (plain(answer)) return true;
  if (!task.valueWords || answer.length !== 2 * task.answer.length) return false;
  const keys = answer.filter((_, i) => i % 2 === 0);
  return keys.every((k, i) => k === task.queries[i]) && plain(answer.filter((_, i) => i % 2 === 1));
}
