import type { Rng } from '../util/random.ts';
import type { TaskFamily, TextPolicy } from './family.ts';

/**
 * A demonstrator that slips (docs/decisions/0028-demonstrator-slips.md): the family's expert, whose
 * final decision goes wrong with probability p (a wrong value in the answer, `done` before the
 * drop). The SFT base imitates it, so it makes the mistake about as often, also on tasks that fit
 * one window: the room RL w/o compaction needs to learn anything at x1. p = 0 is the expert itself
 * (no rng is drawn, so runs without slips are unchanged).
 */
export function slippingExpert(family: TaskFamily, p: number): TextPolicy {
  const { expert, slip } = family;
  if (p <= 0 || !slip) return expert;
  return (messages, rng) => {
    const action = expert(messages, rng);
    const wrong = slip(action, messages, rng);
    return wrong !== undefined && rng.next() < p ? wrong : action;
  };
}

/**
 * A plausible wrong word in place of `correct`: one the window shows (a value of another key, an
 * entity of another fact), or, where it shows none, any word of `universe`.
 */
export function wrongWord(options: {
  correct: string;
  seen: Iterable<string>;
  universe: readonly string[];
  rng: Rng;
}): string | undefined {
  const { correct, rng } = options;
  const seen = [...new Set(options.seen)].filter((w) => w !== correct);
  const pool = seen.length > 0 ? seen : options.universe.filter((w) => w !== correct);
  return pool.length > 0 ? pool[rng.int(pool.length)] : undefined;
}
