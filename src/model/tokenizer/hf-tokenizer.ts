import { Tokenizer as HfCore } from '@huggingface/tokenizers';
import type { Tokenizer } from '../../contracts/index.ts';

/**
 * A Hugging Face tokenizer (`tokenizer.json` + `tokenizer_config.json`) behind the project's
 * Tokenizer interface, run by `@huggingface/tokenizers` (docs/decisions/0012-hf-tokenizers.md).
 *
 * encode never adds special tokens of its own (no BOS, no post-processor): the chat layout owns
 * every marker, so the ids a window holds are exactly what the runtime appended. Added tokens
 * written in the text (`<|im_end|>`) are still recognised, as apply_chat_template's output needs.
 * decode keeps special tokens and never "cleans up" spaces, so decode(encode(t)) === t for any
 * text (byte-level BPE is lossless) and the text an environment receives is the text generated.
 */
export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  private readonly core: HfCore;

  constructor(options: { tokenizerJson: object; tokenizerConfig: object }) {
    this.core = new HfCore(options.tokenizerJson, options.tokenizerConfig);
    let max = -1;
    for (const id of this.core.get_vocab(true).values()) if (id > max) max = id;
    this.vocabSize = max + 1;
  }

  /**
   * Encodings of short texts seen before. encode is a pure function of the text, so this is safe
   * in any context (the runtime encodes each turn's text on its own, never a text in context); it
   * matters for the dense warm-up, which re-encodes the same short parts thousands of times.
   */
  private readonly memo = new Map<string, readonly number[]>();

  encode(text: string): number[] {
    if (text.length > 256) return this.core.encode(text, { add_special_tokens: false }).ids;
    let ids = this.memo.get(text);
    if (!ids) {
      if (this.memo.size >= 100_000) this.memo.clear();
      ids = this.core.encode(text, { add_special_tokens: false }).ids;
      this.memo.set(text, ids);
    }
    return ids.slice();
  }

  decode(tokens: ArrayLike<number>): string {
    if (tokens.length === 0) return '';
    return this.core.decode(Array.from(tokens), { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** The id of one vocabulary entry or added token written as text (`<|im_end|>`); throws if absent. */
  specialId(name: string): number {
    const id = this.core.token_to_id(name);
    if (id === undefined) throw new Error(`token ${JSON.stringify(name)} is not in this tokenizer's vocabulary`);
    return id;
  }

  /** The token's vocabulary string (byte-level form, e.g. `Ġset`), for vocabulary exports. */
  tokenString(id: number): string | undefined {
    return this.core.id_to_token(id);
  }

  /** Ids of the added tokens marked special (`<|im_start|>`, `<|endoftext|>` ...). */
  specialIds(): number[] {
    return [...this.core.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id);
  }
}
