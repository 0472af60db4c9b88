import { kv, type GgufValue } from './gguf-file.ts';
import { VocabMap, type TokenizerRef } from '../tokenizer/vocab-map.ts';
import { WORD_CHAT_TEMPLATE } from '../tokenizer/load-tokenizer.ts';

/**
 * Tokenizer metadata for a GGUF file (the `tokenizer.ggml.*` keys of gguf-py).
 *
 * The word vocabulary (words/vocab.ts: whole words separated by spaces, `<name>` special tokens)
 * is written as a WordPiece (`bert`) vocabulary whose every word is a word-initial piece
 * (`▁word`): llama.cpp's WordPiece tokenizer splits text on whitespace and punctuation and takes
 * the longest piece, so text in the vocabulary tokenizes to exactly the ids WordTokenizer gives
 * (special tokens when parsed as specials), words outside it become the unknown id (no crash),
 * and detokenizing gives the words back with a space before each. The one token it cannot
 * produce from text is the newline, which whitespace splitting drops; ids carry it unchanged.
 * The other llama.cpp vocabularies fit worse: a `llama` (SentencePiece) vocabulary without byte
 * tokens crashes llama.cpp on unknown text, and a `gpt2` BPE vocabulary can only form whole words
 * through merge chains whose intermediate pieces would need token ids of their own.
 */

/** gguf-py TokenType. */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

const isSpecial = (w: string) => w.startsWith('<') && w.endsWith('>') && w.length > 2;

/**
 * Metadata for the word vocabulary `words` (index = token id), padded with unused tokens up to
 * `vocabSize` rows of the model.
 */
export function wordVocabMetadata({
  words,
  vocabSize,
}: {
  words: readonly string[];
  vocabSize: number;
}): Record<string, GgufValue> {
  if (vocabSize < words.length)
    throw new Error(`the model has ${vocabSize} token rows, fewer than the ${words.length} words of its vocabulary`);
  const id = (w: string) => {
    const i = words.indexOf(w);
    if (i < 0) throw new Error(`the word vocabulary has no ${w} token`);
    return i;
  };
  const tokens: string[] = [];
  const types: number[] = [];
  for (const w of words) {
    if (isSpecial(w)) {
      tokens.push(w);
      types.push(TOKEN_TYPE.control);
    } else if (w === '\n') {
      tokens.push(w);
      types.push(TOKEN_TYPE.normal);
    } else {
      tokens.push(`\u2581${w}`);
      types.push(TOKEN_TYPE.normal);
    }
  }
  for (let i = words.length; i < vocabSize; i++) {
    tokens.push(`<unused_${i}>`);
    types.push(TOKEN_TYPE.unused);
  }
  return {
    'tokenizer.ggml.model': kv.str('bert'),
    'tokenizer.ggml.tokens': kv.strs(tokens),
    'tokenizer.ggml.token_type': kv.i32s(types),
    'tokenizer.ggml.bos_token_id': kv.u32(id('<bos>')),
    'tokenizer.ggml.eos_token_id': kv.u32(id('<eot>')),
    'tokenizer.ggml.eot_token_id': kv.u32(id('<eot>')),
    'tokenizer.ggml.seperator_token_id': kv.u32(id('<eot>')),
    'tokenizer.ggml.padding_token_id': kv.u32(id('<pad>')),
    // The vocabulary has no unknown word; WordPiece needs one, and <pad> never appears in a window.
    'tokenizer.ggml.unknown_token_id': kv.u32(id('<pad>')),
    'tokenizer.ggml.add_bos_token': kv.bool(false),
    'tokenizer.ggml.add_eos_token': kv.bool(false),
    'tokenizer.ggml.add_sep_token': kv.bool(false),
    'tokenizer.ggml.normalizer.lowercase': kv.bool(false),
    'tokenizer.chat_template': kv.str(WORD_CHAT_TEMPLATE),
  };
}

/**
 * Which tokenizer a GGUF file's ids belong to and, for a trimmed vocabulary (tokenizer/vocab-map.ts), the
 * real id of each row but the last (the unknown slot): `compaction_rl.*` keys, so the llama.cpp
 * sampler speaks the same real ids as the checkpoint the file came from.
 */
export function vocabMapMetadata(vocab: VocabMap): Record<string, GgufValue> {
  return {
    'compaction_rl.tokenizer.name': kv.str(vocab.tokenizer.name),
    ...(vocab.tokenizer.sha256 ? { 'compaction_rl.tokenizer.sha256': kv.str(vocab.tokenizer.sha256) } : {}),
    ...(vocab.ids ? { 'compaction_rl.vocabulary.ids': kv.i32s([...vocab.ids]) } : {}),
  };
}

type CrlKeys = { compaction_rl?: { tokenizer?: { name?: unknown; sha256?: unknown }; vocabulary?: { ids?: unknown } } };

/**
 * The tokenizer a GGUF file's metadata (as node-llama-cpp nests it) names in compaction_rl.* keys;
 * null for a file crl export did not write.
 */
export function ggufTokenizerRef(metadata: unknown): TokenizerRef | null {
  const t = (metadata as CrlKeys).compaction_rl?.tokenizer;
  if (typeof t?.name !== 'string') return null;
  return { name: t.name, ...(typeof t.sha256 === 'string' ? { sha256: t.sha256 } : {}) };
}

/** The VocabMap a GGUF file's metadata describes; the word vocabulary's when it names none. */
export function vocabMapFromGguf(metadata: unknown, vocabSize: number): VocabMap {
  const ref = ggufTokenizerRef(metadata) ?? { name: 'word' };
  const ids = (metadata as CrlKeys).compaction_rl?.vocabulary?.ids;
  if (Array.isArray(ids)) {
    const map = VocabMap.trimmed(ids as number[], ref);
    if (map.size !== vocabSize)
      throw new Error(
        `the GGUF file maps ${map.size} rows (compaction_rl.vocabulary.ids + 1), its vocabulary has ${vocabSize}`,
      );
    return map;
  }
  return VocabMap.identity(vocabSize, ref);
}
