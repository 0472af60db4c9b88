import type { Environment, EnvReset, EnvStep } from '../../rollout/types.ts';
import { parseKnobs } from '../knobs.ts';
import { words } from '../visible-window.ts';
import { hopSearchKnobs, type HopSearchKnobs } from './knobs.ts';
import { factText, generateHopSearch, questionText, verifyHopSearch, type HopSearchTask } from './generate.ts';

/** At most this many ids per search result (a subject has at most one fact per relation: 6). */
export const MAX_RESULTS = 10;

/**
 * hop-search: `search <entity>` lists the ids of documents with a fact about the entity
 * (it is the fact's subject; at most one per relation, so <= 6 ids), `open <id>` shows
 * one (`doc 17 : boss of c is k . pet of k is m`), `answer v1 v2 …` ends the episode with one
 * word per question, in order. Reward 1 iff every answer is right.
 */
export class HopSearchEnv implements Environment {
  readonly name = 'hop-search';
  readonly knobs: HopSearchKnobs;
  private task: HopSearchTask | null = null;
  private steps = 0;
  private finished = false;

  constructor(knobs: Partial<HopSearchKnobs> = {}) {
    this.knobs = parseKnobs({ family: 'hop-search', schema: hopSearchKnobs as never, input: knobs });
  }

  get current(): HopSearchTask {
    if (!this.task) throw new Error('hop-search: call reset(seed) before reading the task');
    return this.task;
  }

  /** Safety cap, far above the expert's need (one search and a few opens per hop). */
  get maxSteps(): number {
    return Math.min(60, this.knobs.questions * this.knobs.hops * (this.knobs.docs + 2) + 4);
  }

  reset(seed: number): EnvReset {
    this.task = generateHopSearch(seed, this.knobs);
    this.steps = 0;
    this.finished = false;
    return { instruction: `search and open docs , then answer . ${this.task.questions.map(questionText).join(' . ')}` };
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
    } else if (ws.length === 2 && ws[0] === 'search') {
      const term = ws[1]!;
      const hits = task.docs.filter((d) => d.facts.some((f) => f.subject === term));
      const ids = hits.slice(0, MAX_RESULTS).map((d) => d.id);
      out = { observation: `results ${ids.length > 0 ? ids.join(' ') : 'none'}`, done: false, reward: 0 };
    } else if (ws.length === 2 && ws[0] === 'open') {
      const doc = task.docs.find((d) => String(d.id) === ws[1]);
      const observation = doc ? `doc ${doc.id} : ${doc.facts.map(factText).join(' . ')}` : 'doc not found';
      out = { observation, done: false, reward: 0 };
    } else {
      out = { observation: 'invalid action', done: false, reward: 0 };
    }
    if (!out.done && this.steps >= this.maxSteps) out = { observation: `${out.observation} . no steps left`, done: true, reward: 0 };
    this.finished = out.done;
    return out;
  }
}
