import { Tokenizer as HfCore } from '@huggingface/tokenizers';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { kv, type GgufValue } from './gguf-file.ts';
import { PRE_TOKENIZER_BY_HASH } from './gguf-pretokenizers.ts';
import { TOKEN_TYPE } from './gguf-vocab.ts';
import { CheckpointFormatError } from './safetensors.ts';

/**
 * A Hugging Face byte-level BPE tokenizer (tokenizer.json + tokenizer_config.json: Qwen, Llama-3,
 * GPT-2 style) as a GGUF `gpt2` vocabulary, the way convert_hf_to_gguf.py writes one: every id's
 * token string (byte-level form), its type (added tokens: control when special or `<|…|>`-shaped,
 * else user-defined; ids without a token: unused `[PADn]`), the merges as "a b" strings, the
 * special-token ids, and `tokenizer.ggml.pre`, found as the converter finds it: the sha256 of the
 * ids the tokenizer gives a fixed check text, looked up in llama.cpp's table.
 */
const AddedTokenSchema = z.looseObject({
  id: z.number().int().nonnegative(),
  content: z.string(),
  special: z.boolean().default(false),
});
const TokenizerJsonSchema = z.looseObject({
  added_tokens: z.array(AddedTokenSchema).default([]),
  model: z.looseObject({
    type: z.string(),
    vocab: z.record(z.string(), z.number().int().nonnegative()),
    merges: z.array(z.union([z.string(), z.tuple([z.string(), z.string()])])).default([]),
  }),
});
const TokenText = z.union([z.string(), z.looseObject({ content: z.string() }), z.null()]).optional();
const TokenizerConfigSchema = z.looseObject({
  bos_token: TokenText,
  eos_token: TokenText,
  pad_token: TokenText,
  unk_token: TokenText,
  add_bos_token: z.boolean().optional(),
  add_eos_token: z.boolean().optional(),
});

/** The converter's check text (convert_hf_to_gguf.py get_vocab_base_pre). */
const CHECK_TEXT =
  "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL";

/** llama.cpp's name for the tokenizer's pre-tokenizer, or null when its table does not know it. */
export function preTokenizerName(tokenizerJson: object, tokenizerConfig: object): string | null {
  const ids = new HfCore(tokenizerJson, tokenizerConfig).encode(CHECK_TEXT, { add_special_tokens: true }).ids;
  // The converter hashes Python's str() of the id list.
  const hash = createHash('sha256')
    .update(`[${ids.join(', ')}]`)
    .digest('hex');
  return PRE_TOKENIZER_BY_HASH[hash] ?? null;
}

/** The token text of a trimmed vocabulary's unknown slot, which the model never emits. */
export const UNKNOWN_SLOT_TOKEN = '<|crl_unknown|>';

const looksSpecial = (t: string) =>
  (t.startsWith('<|') && t.endsWith('|>')) || (t.startsWith('<｜') && t.endsWith('｜>'));

export function bpeVocabMetadata({
  tokenizerJson,
  tokenizerConfig,
  chatTemplate,
  vocabSize,
  trimmed,
  what,
}: {
  tokenizerJson: unknown;
  tokenizerConfig: unknown;
  chatTemplate: string | null;
  /** Rows of the model's embedding and output layers. */
  vocabSize: number;
  /**
   * A trimmed vocabulary (tokenizer/vocab-map.ts): the real id of each of the model's rows but the last,
   * which is the unknown slot. The GGUF then lists those rows' tokens in row order.
   */
  trimmed?: readonly number[] | undefined;
  /** Names the files in errors. */
  what: string;
}): { metadata: Record<string, GgufValue>; warnings: string[] } {
  const tj = TokenizerJsonSchema.safeParse(tokenizerJson);
  if (!tj.success) throw new CheckpointFormatError(`${what}: tokenizer.json is not a Hugging Face tokenizer file`);
  if (tj.data.model.type !== 'BPE')
    throw new CheckpointFormatError(
      `${what}: tokenizer.json model.type ${tj.data.model.type} is not supported for GGUF export (BPE only)`,
    );
  const tc = TokenizerConfigSchema.safeParse(tokenizerConfig ?? {});
  if (!tc.success) throw new CheckpointFormatError(`${what}: tokenizer_config.json is malformed`);
  let realSize = vocabSize;
  if (trimmed) {
    realSize = 0;
    for (const id of Object.values(tj.data.model.vocab)) realSize = Math.max(realSize, id + 1);
    for (const a of tj.data.added_tokens) realSize = Math.max(realSize, a.id + 1);
  }
  const tokens: (string | undefined)[] = new Array<string | undefined>(realSize);
  const types = new Array<number>(realSize).fill(TOKEN_TYPE.unused);
  const ids = new Map<string, number>();
  const put = (id: number, text: string, type: number) => {
    if (id >= realSize)
      throw new CheckpointFormatError(
        `${what}: token ${JSON.stringify(text)} has id ${id}, beyond the model's ${vocabSize} rows`,
      );
    tokens[id] = text;
    types[id] = type;
    ids.set(text, id);
  };
  for (const [text, id] of Object.entries(tj.data.model.vocab)) put(id, text, TOKEN_TYPE.normal);
  for (const a of tj.data.added_tokens)
    put(a.id, a.content, a.special || looksSpecial(a.content) ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined);
  let list = Array.from(tokens, (t, i) => t ?? `[PAD${i}]`);
  let rowTypes = types;
  // Row of each token text: the real id, or its row in a trimmed vocabulary (absent: not a row).
  let row = (id: number): number | undefined => id;
  if (trimmed) {
    if (trimmed.length + 1 !== vocabSize)
      throw new CheckpointFormatError(
        `${what}: a trimmed vocabulary of ${trimmed.length} ids + 1 unknown slot != ${vocabSize} rows`,
      );
    const rows = new Map(trimmed.map((id, i) => [id, i]));
    list = [...trimmed.map((id) => list[id] ?? `[PAD${id}]`), UNKNOWN_SLOT_TOKEN];
    rowTypes = [...trimmed.map((id) => types[id] ?? TOKEN_TYPE.unused), TOKEN_TYPE.control];
    row = (id) => rows.get(id);
  }
  const merges = tj.data.model.merges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));
  const warnings: string[] = [];
  let pre = preTokenizerName(tj.data, tc.data);
  if (!pre) {
    pre = 'default';
    warnings.push(
      `${what}: llama.cpp does not know this tokenizer's pre-tokenizer; the GGUF says "default", so llama.cpp may split text differently (token ids given to it are unaffected)`,
    );
  }
  const metadata: Record<string, GgufValue> = {
    'tokenizer.ggml.model': kv.str('gpt2'),
    'tokenizer.ggml.pre': kv.str(pre),
    'tokenizer.ggml.tokens': kv.strs(list),
    'tokenizer.ggml.token_type': kv.i32s(rowTypes),
    'tokenizer.ggml.merges': kv.strs(merges),
    'tokenizer.ggml.add_bos_token': kv.bool(tc.data.add_bos_token ?? false),
    'tokenizer.ggml.add_eos_token': kv.bool(tc.data.add_eos_token ?? false),
  };
  const special = {
    bos: tc.data.bos_token,
    eos: tc.data.eos_token,
    padding: tc.data.pad_token,
    unknown: tc.data.unk_token,
  };
  for (const [key, tok] of Object.entries(special)) {
    const text = typeof tok === 'string' ? tok : tok?.content;
    const real = text === undefined ? undefined : ids.get(text);
    const id = real === undefined ? undefined : row(real);
    if (id !== undefined) metadata[`tokenizer.ggml.${key}_token_id`] = kv.u32(id);
  }
  if (chatTemplate) metadata['tokenizer.chat_template'] = kv.str(chatTemplate);
  return { metadata, warnings };
}
