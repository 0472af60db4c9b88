import { verbTools } from './action-tools.ts';
import { z } from 'zod';
import type { ChatMessage, Environment } from '../contracts/index.ts';
import { Rng } from '../util/random.ts';
import type { TaskFamily } from './family.ts';
import type { TextPolicy } from '../contracts/index.ts';

/**
 * chunk-sum: the smoke task, a small scripted family that exercises the runtime, training and the
 * CLI end to end in seconds (the `smoke` preset, CLI tests). The agent reads chunks 0..n-1 (each a value 0..4 plus filler
 * words, so windows fill up) and answers their total. The needed facts — the goal n, the last
 * chunk read and the running total — must survive compaction through the summary.
 */

const KnobsSchema = z
  .object({
    chunks: z.number().int().min(1).max(12).default(12),
    filler: z.number().int().min(0).max(40).default(8),
  })
  .strict();
type Knobs = z.infer<typeof KnobsSchema>;

class ChunkSumEnv implements Environment {
  readonly name = 'chunk-sum';
  private values: number[] = [];
  private done = false;

  constructor(private readonly knobs: Knobs) {}

  reset(seed: number) {
    const rng = new Rng(seed);
    this.values = Array.from({ length: this.knobs.chunks }, () => rng.int(5));
    this.done = false;
    return { instruction: `read chunk 0 to ${this.knobs.chunks - 1} then answer the total` };
  }

  step(action: string) {
    if (this.done) return { observation: 'error done', done: true, reward: 0 };
    const words = action.trim().split(/\s+/);
    if (words[0] === 'read' && words[1] === 'chunk' && /^\d+$/.test(words[2] ?? '')) {
      const i = Number(words[2]);
      if (i >= this.values.length) return { observation: `chunk ${i} not found`, done: false, reward: 0 };
      const filler = Array(this.knobs.filler).fill('filler').join(' ');
      return { observation: `chunk ${i} value ${this.values[i]} ${filler}`.trim(), done: false, reward: 0 };
    }
    if (words[0] === 'answer' && words[1] === 'total' && /^\d+$/.test(words[2] ?? '')) {
      this.done = true;
      const ok = Number(words[2]) === this.values.reduce((a, b) => a + b, 0);
      return { observation: ok ? 'correct' : 'wrong', done: true, reward: ok ? 1 : 0 };
    }
    return { observation: 'invalid action', done: false, reward: 0 };
  }
}

/** What the visible window says: goal n (if known), last chunk read, running total. */
interface State {
  goal: number | null;
  last: number;
  total: number;
  notFound: boolean;
}

function readState(messages: readonly ChatMessage[]): State {
  const s: State = { goal: null, last: -1, total: 0, notFound: false };
  for (const m of messages) {
    const g = /(?:to|goal) (\d+)/.exec(m.content);
    if (m.role === 'user' && g) s.goal = Number(g[1]);
    const p = /chunk (\d+) total (\d+)/.exec(m.content);
    if (m.role === 'user' && p) {
      s.last = Number(p[1]);
      s.total = Number(p[2]);
    }
    const o = /^chunk (\d+) value (\d+)/.exec(m.content);
    // Tail steps repeat observations the summary already counted: add only newer chunks.
    if (m.role === 'observation' && o && Number(o[1]) === s.last + 1) {
      s.last++;
      s.total += Number(o[2]);
    }
    if (m.role === 'observation' && /not found/.test(m.content)) s.notFound = true;
  }
  return s;
}

function isSummaryRequest(messages: readonly ChatMessage[]): boolean {
  const last = messages[messages.length - 1];
  return last !== undefined && last.role === 'user' && /\bsummarize\b/.test(last.content);
}

function summaryOf(s: State, keep: { goal: boolean; progress: boolean }): string {
  const parts: string[] = [];
  if (keep.goal && s.goal !== null) parts.push(`goal ${s.goal}`);
  if (keep.progress && s.last >= 0) parts.push(`chunk ${s.last} total ${s.total}`);
  return parts.join(' , ') || 'none';
}

const oracle: TextPolicy = (messages) => summaryOf(readState(messages), { goal: true, progress: true });

const expert: TextPolicy = (messages) => {
  if (isSummaryRequest(messages)) return oracle(messages, new Rng(0));
  const s = readState(messages);
  const finished = s.goal !== null ? s.last >= s.goal : s.notFound;
  return finished ? `answer total ${s.total}` : `read chunk ${s.last + 1}`;
};

export const chunkSumFamily: TaskFamily<Knobs> = {
  name: 'chunk-sum',
  description: 'read numbered chunks padded with filler and answer their total (runtime smoke task)',
  knobs: KnobsSchema,
  variants: { short: { chunks: 4 } },
  trainSeeds: { start: 0, end: 10_000 },
  evalSeeds: { start: 10_000, end: 11_000 },
  create: (knobs) => new ChunkSumEnv(KnobsSchema.parse(knobs ?? {})),
  expert,
  tools: verbTools([
    {
      name: 'read_chunk',
      description: 'Show one chunk of numbers.',
      words: ['read', 'chunk'],
      params: [{ name: 'index', type: 'integer', description: 'the chunk number' }],
    },
    {
      name: 'answer_total',
      description: 'Answer the total and end the task.',
      words: ['answer', 'total'],
      params: [{ name: 'total', type: 'integer', description: 'the total' }],
    },
  ]),
  summaryWriters: {
    oracle,
    lossy: (p) => (messages, rng) =>
      summaryOf(readState(messages), { goal: rng.next() >= p, progress: rng.next() >= p }),
  },
};
