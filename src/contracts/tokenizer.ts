/**
 * Token ids <-> text for one vocabulary (the built-in word vocabulary, or a Hugging Face tokenizer:
 * src/model/tokenizer/load-tokenizer.ts). Chat markers are not the tokenizer's business: the rollout
 * runtime derives them from the model's chat template (src/rollout/chat-format.ts).
 */
export interface Tokenizer {
  /** Every id is below this. */
  readonly vocabSize: number;
  /** Text -> ids; adds no special token of its own. */
  encode(text: string): number[];
  decode(tokens: ArrayLike<number>): string;
  /** True for a word-level vocabulary, where whitespace only separates tokens (the word tokenizer). */
  readonly wordLevel?: boolean;
}
