import type { Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { parseKnobs } from '../knobs.ts';
import { isLetterWord, words } from '../visible-window.ts';
import { hopSearchKnobs, type HopSearchKnobs } from './knobs.ts';
import { docText, generateHopSearch, questionText, verifyHopSearch, type HopSearchTask } from './generate.ts';
import { isRelation } from './relations.ts';

/** The instruction: the only place the questions are stated, so they must survive compaction. */
export const instructionText = (task: HopSearchTask): string =>
  `search and open docs , then answer . ${task.questions.map(questionText).join(' . ')}`;

/**
 * hop-search: `search <entity> <relation>` lists the ids of the documents with that fact
 * (`results 13`, at most one since (subject, relation) is unique; `results none`), `open <id>`
 * shows one (`doc 13 : q boss e . k pet m`), `answer v1 v2 …` ends the episode with one word per
 * question, in order. Reward 1 iff every answer is right.
 */
export class HopSearchEnv implements Environment {
  readonly name = 'hop-search';
  readonly knobs: HopSearchKnobs;
  private task: HopSearchTask | null = null;
  private steps = 0;
  private finished = false;

  constructor(knobs: Partial<HopSearchKnobs> = {}) {
    this.knobs = parseKnobs({ family: 'hop-search', schema: hopSearchKnobs, input: knobs });
  }

  get current(): HopSearchTask {
    if (!this.task) throw new Error('hop-search: call reset(seed) before reading the task');
    return this.task;
  }

  /** Safety cap, three times the expert's need (a search and an open per hop, then the answer). */
  get maxSteps(): number {
    return Math.min(60, 6 * this.knobs.questions * this.knobs.hops + 3);
  }

  reset(seed: number): EnvReset {
    this.task = generateHopSearch(seed, this.knobs);
    this.steps = 0;
    this.finished = false;
    return { instruction: instructionText(this.task) };
  }

  step(action: string): EnvStep {
    const task = this.current;
    if (this.finished) throw new Error('hop-search: the episode is over; call reset(seed)');
    this.steps++;
    const ws = words(action);
    let out: EnvStep;
    if (ws[0] === 'answer') {
      const ok = verifyHopSearch(task, ws.slice(1));
      out = { observation: ok ? 'correct' : 'wrong', done: true, reward: ok ? 1 : 0 };
    } else if (ws.length === 3 && ws[0] === 'search' && isLetterWord(ws[1]) && isRelation(ws[2])) {
      const [, subject, rel] = ws;
      const ids = task.docs.filter((d) => d.facts.some((f) => f.subject === subject && f.rel === rel)).map((d) => d.id);
      out = { observation: `results ${ids.length > 0 ? ids.join(' ') : 'none'}`, done: false, reward: 0 };
    } else if (ws.length === 2 && ws[0] === 'open') {
      const doc = task.docs.find((d) => String(d.id) === ws[1]);
      out = { observation: doc ? docText(doc) : 'doc not found', done: false, reward: 0 };
    } else {
      out = { observation: 'invalid action', done: false, reward: 0 };
    }
    if (!out.done && this.steps >= this.maxSteps)
      out = { observation: `${out.observation} . no steps left`, done: true, reward: 0 };
    this.finished = out.done;
    return out;
  }
}
