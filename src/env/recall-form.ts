import type { DensePart, TaskFamily } from './family.ts';
import { LETTERS } from '../words/vocab.ts';
import type { Rng } from '../util/random.ts';
import { valueText } from './value-words.ts';

/**
 * Recall form, the first stage of every family's dense warm-up (docs/sft.md, "Recall stage at 128
 * sequences per step"), in bench/probe-recall.ts's layout: `e 14 h 3 m 22 k 5 :` then `probes`
 * queries `h` → `3`, `pairs` distinct letter keys with number values. The value is predicted at the
 * key token itself: the induction-head lookup that a summary's `set k` → value (kv-ledger), a
 * question's entity → document fact (hop-search) or a target room id (fog-courier) need. Family
 * independent: plain vocabulary words, no task text. A kv-ledger-worded variant (`set e 14 , ...`)
 * stayed on the plateau for 2000 steps (docs/sft.md, d8). `valueWords` writes the values as value
 * words (`e apple`), for a family whose task does (kv-ledger's valueWords knob).
 */
export function recallForm(options: { rng: Rng; probes: number; pairs?: number; valueWords?: boolean }): DensePart[] {
  const { rng } = options;
  const keys = rng.shuffle([...LETTERS]).slice(0, options.pairs ?? 4);
  const values = new Map(keys.map((k) => [k, valueText(rng.int(64), options.valueWords ?? false)]));
  const parts: DensePart[] = [{ kind: 'context', text: `${keys.map((k) => `${k} ${values.get(k)}`).join(' ')} :` }];
  for (let p = 0; p < options.probes; p++) {
    const k = rng.pick(keys);
    parts.push({ kind: 'context', text: k }, { kind: 'target', text: values.get(k)! });
  }
  return parts;
}

/**
 * The recall form writes values as words when the family does: always (shell-ledger) or by its
 * knobs (kv-ledger's valueWords). Recall learned on digits does not carry over to value words.
 */
export const recallValueWords = (family: Pick<TaskFamily, 'sft'>, knobs: Readonly<Record<string, unknown>>): boolean =>
  family.sft?.valueWords === true || knobs.valueWords === true;
