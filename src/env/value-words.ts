/**
 * Value words: 64 concrete nouns that stand for the values 0..63 where a task writes values as
 * words instead of numbers (kv-ledger's `valueWords` knob, the recall form's `valueWords`).
 *
 * Why: a subword tokenizer writes a number as several tokens. Qwen3 gives every digit its own
 * token and a lone space token before them (`set`, ` h`, ` `, `3`, `4`), so a value read back by
 * key is a copy of one to two tokens that start two positions after the key, where the word
 * vocabulary copies the one token right after it. The 2-layer embedded model learns the one-token
 * lookup and not the copy of digits (docs/decisions/0026, 0030). Each word here is one token after a space in Qwen3's vocabulary (a test
 * checks it), so with value words the lookup has the word vocabulary's shape again.
 * Order is the value: VALUE_WORDS[v] spells v. Append only.
 */
export const VALUE_WORDS = [
  'apple',
  'river',
  'stone',
  'cloud',
  'tiger',
  'piano',
  'lemon',
  'candle',
  'rocket',
  'garden',
  'silver',
  'forest',
  'bottle',
  'mirror',
  'planet',
  'pencil',
  'window',
  'jacket',
  'carpet',
  'bridge',
  'castle',
  'dragon',
  'guitar',
  'hammer',
  'island',
  'jungle',
  'kettle',
  'ladder',
  'marble',
  'needle',
  'orange',
  'pepper',
  'rabbit',
  'saddle',
  'tomato',
  'violin',
  'wallet',
  'yellow',
  'anchor',
  'basket',
  'cherry',
  'desert',
  'engine',
  'feather',
  'ginger',
  'harbor',
  'jewel',
  'kitten',
  'lantern',
  'nickel',
  'ocean',
  'pillow',
  'ribbon',
  'spider',
  'throne',
  'tunnel',
  'velvet',
  'walnut',
  'button',
  'copper',
  'dollar',
  'finger',
  'helmet',
  'insect',
] as const;

const INDEX = new Map<string, number>(VALUE_WORDS.map((w, i) => [w, i]));

/** How a value 0..63 is written: its number, or its value word. */
export function valueText(value: number, words: boolean): string {
  return words ? VALUE_WORDS[value]! : String(value);
}

/** True for a value word. */
export const isValueWord = (w: string | undefined): boolean => w !== undefined && INDEX.has(w);
