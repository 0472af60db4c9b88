import { WORD_CHAT_TEMPLATE } from './load-tokenizer.ts';

/**
 * The word vocabulary as Hugging Face tokenizer files, for `crl export --format hf`: a WordLevel
 * model behind a WhitespaceSplit pre-tokenizer, with the special tokens and the newline as added
 * tokens (matched in the raw text before splitting, so `\n` keeps its id). Tokenizing text in the
 * vocabulary gives the ids WordTokenizer gives.
 */
const isSpecial = (w: string) => w.startsWith('<') && w.endsWith('>') && w.length > 2;

export function wordTokenizerJson(words: readonly string[]): Record<string, unknown> {
  const added = words.flatMap((w, id) =>
    isSpecial(w) || w === '\n'
      ? [
          {
            id,
            content: w,
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special: isSpecial(w),
          },
        ]
      : [],
  );
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: null,
    decoder: null,
    model: { type: 'WordLevel', vocab: Object.fromEntries(words.map((w, i) => [w, i])), unk_token: '<pad>' },
  };
}

export function wordTokenizerConfigJson(words: readonly string[]): Record<string, unknown> {
  if (!words.includes('<bos>') || !words.includes('<eot>') || !words.includes('<pad>'))
    throw new Error('the word vocabulary needs <bos>, <eot> and <pad>');
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: '<bos>',
    eos_token: '<eot>',
    pad_token: '<pad>',
    unk_token: '<pad>',
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    chat_template: WORD_CHAT_TEMPLATE,
  };
}
