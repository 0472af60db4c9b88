import type { Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { parseKnobs } from '../knobs.ts';
import { words } from '../visible-window.ts';
import { kvLedgerKnobs, type KvLedgerKnobs } from './knobs.ts';
import { chunkText, generateKvLedger, verifyKvLedger, type KvLedgerTask } from './generate.ts';

/**
 * kv-ledger: `read` shows the next chunk (`chunk 3 : set a 5 , del b , filler 17`); after the
 * last chunk it shows `end` (and, with queryPosition 'end', the queries). `answer v1 v2 …`
 * ends the episode; reward 1 iff every value matches (a deleted or unset key is `none`).
 */
export class KvLedgerEnv implements Environment {
  readonly name = 'kv-ledger';
  readonly knobs: KvLedgerKnobs;
  private task: KvLedgerTask | null = null;
  private cursor = 0;
  private steps = 0;
  private finished = false;
  /** 'end' has been shown: every chunk was read, so an answer is accepted. */
  private ended = false;

  constructor(knobs: Partial<KvLedgerKnobs> = {}) {
    this.knobs = parseKnobs({ family: 'kv-ledger', schema: kvLedgerKnobs, input: knobs });
  }

  /** The current task (for tests and tools); throws before reset. */
  get current(): KvLedgerTask {
    if (!this.task) throw new Error('kv-ledger: call reset(seed) before reading the task');
    return this.task;
  }

  /** Safety cap; the expert needs this task's chunks + 2 steps. */
  get maxSteps(): number {
    return 2 * this.current.chunks.length + 8;
  }

  reset(seed: number): EnvReset {
    this.task = generateKvLedger(seed, this.knobs);
    this.cursor = 0;
    this.steps = 0;
    this.finished = false;
    this.ended = false;
    const q = this.task.queries.join(' ');
    // The instruction avoids the word 'end': the expert reads it as "every chunk was read".
    const instruction =
      this.task.queryPosition === 'start'
        ? `read all , then answer . queries ${q}`
        : 'read all , then answer the queries';
    return { instruction };
  }

  step(action: string): EnvStep {
    const task = this.current;
    if (this.finished) throw new Error('kv-ledger: the episode is over; call reset(seed)');
    this.steps++;
    const ws = words(action);
    let out: EnvStep;
    if (ws[0] === 'answer' && !this.ended) {
      // The task says "read all , then answer": an answer before the end of the stream is refused
      // (the episode goes on). Without this rule RL learned to answer early, guessing that the
      // queried key (the one untouched longest) keeps its early value, instead of summarizing.
      out = { observation: 'invalid action . read all , then answer', done: false, reward: 0 };
    } else if (ws[0] === 'answer') {
      const ok = verifyKvLedger(task, ws.slice(1));
      out = { observation: ok ? 'correct' : 'wrong', done: true, reward: ok ? 1 : 0 };
    } else if (ws.length === 1 && ws[0] === 'read') {
      out = { observation: this.read(task), done: false, reward: 0 };
    } else {
      out = { observation: 'invalid action', done: false, reward: 0 };
    }
    if (!out.done && this.steps >= this.maxSteps)
      out = { observation: `${out.observation} . no steps left`, done: true, reward: 0 };
    this.finished = out.done;
    return out;
  }

  private read(task: KvLedgerTask): string {
    if (this.cursor < task.chunks.length) {
      const i = this.cursor++;
      return chunkText(i, task.chunks[i]!, task.valueWords);
    }
    this.ended = true;
    return task.queryPosition === 'end' ? `end , queries ${task.queries.join(' ')}` : 'end';
  }
}
