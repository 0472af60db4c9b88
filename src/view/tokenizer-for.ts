import { WordTokenizer } from '../model/tokenizer.ts';
import type { Tokenizer } from '../rollout/types.ts';

/**
 * The tokenizer that wrote a record, by the name the record carries (absent: the word vocabulary,
 * the only one records were written with before records named theirs). The viewer decodes with
 * the run's own tokenizer, never with a fixed word list.
 */
const cache = new Map<string, Tokenizer>();

export function tokenizerFor(name: string | undefined): { name: string; tokenizer: Tokenizer } {
  const key = name ?? 'word';
  let t = cache.get(key);
  if (!t) {
    if (key !== 'word')
      throw new Error(`records name the tokenizer ${JSON.stringify(key)}, which this version cannot load`);
    t = new WordTokenizer();
    cache.set(key, t);
  }
  return { name: key, tokenizer: t };
}
