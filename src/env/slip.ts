import type { RandomSource, TextPolicy } from '../contracts/index.ts';
import type { TaskFamily } from './family.ts';

/**
 * A demonstrator that slips (docs/decisions/0028-demonstrator-slips.md): the family's expert, whose
 * final decision goes wrong with probability p (a wrong value in the answer, `done` before the
 * drop). The SFT base imitates it, so it makes the mistake about as often, also on tasks that fit
 * one window: the room RL w/o compaction needs to learn anything at x1. p = 0 is the expert itself
 * (no rng is drawn, so runs without slips are unchanged).
 */
export function slippingExpert(family: TaskFamily, p: number): TextPolicy {
  const { expert } = family;
  const slip = family.sft?.slip;
  if (p <= 0 || !slip) return expert;
  return (messages, rng) => {
    const action = expert(messages, rng);
    const wrong = slip(action, messages, rng);
    return wrong !== undefined && rng.next() < p ? wrong : action;
  };
}

/**
 * The answer `answer w1 w2 …` with one of its answer words (those `isAnswerWord` accepts) replaced by
 * a plausible wrong word: one the window shows (`seen`: a value of another key, an entity of
 * another fact), or, where it shows none, any word of `universe(correct)`. Undefined for any other
 * action and for an answer without answer words (`answer none`).
 */
export function slipAnswerWord(options: {
  action: string;
  isAnswerWord: (w: string) => boolean;
  seen: () => Iterable<string>;
  universe: (correct: string) => readonly string[];
  rng: RandomSource;
}): string | undefined {
  const { rng } = options;
  const ws = options.action.split(' ');
  if (ws[0] !== 'answer') return undefined;
  const at = ws.flatMap((w, i) => (i > 0 && options.isAnswerWord(w) ? [i] : []));
  if (at.length === 0) return undefined;
  const i = at[rng.int(at.length)]!;
  const correct = ws[i]!;
  const seen = [...new Set(options.seen())].filter((w) => w !== correct);
  const pool = seen.length > 0 ? seen : options.universe(correct).filter((w) => w !== correct);
  if (pool.length === 0) return undefined;
  return [...ws.slice(0, i), pool[rng.int(pool.length)]!, ...ws.slice(i + 1)].join(' ');
}
