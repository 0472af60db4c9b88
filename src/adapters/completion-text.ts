import type { Tokenizer } from '../contracts/index.ts';

/**
 * Text for the OpenAI completions answer (src/serve/openai-completions.ts): each token's piece of text, so
 * that the pieces concatenate to the decoded text and `text_offset` points into it, and the cut
 * at the first stop string. A token's piece is what it adds to the decoded text of the tokens
 * before it (incremental detokenization over a short window, as vLLM detokenizes), so spacing
 * rules that depend on the previous token come out right.
 */
const WINDOW = 6;

export class Detokenizer {
  constructor(private readonly tokenizer: Tokenizer) {}

  /** Decoded text; ids outside the tokenizer's vocabulary (a model with padding rows) add nothing. */
  decode(ids: readonly number[]): string {
    return this.tokenizer.decode(ids.filter((t) => t >= 0 && t < this.tokenizer.vocabSize));
  }

  /** The text `token` adds after `before` (its last few tokens are enough context). */
  piece(before: readonly number[], token: number): string {
    const w = before.slice(-WINDOW);
    const a = this.decode(w);
    const b = this.decode([...w, token]);
    return b.startsWith(a) ? b.slice(a.length) : b;
  }

  /** Pieces of `tokens` following `context` (empty context: the first piece has no lead-in). */
  pieces(context: readonly number[], tokens: readonly number[]): string[] {
    const all = [...context];
    return tokens.map((t) => {
      const p = this.piece(all, t);
      all.push(t);
      return p;
    });
  }
}

/**
 * The first stop string in the generated text: generation ends with the token that completes it,
 * and the text is cut before it (or after it with include_stop_str_in_output), as vLLM does.
 */
export function applyStopStrings(options: {
  pieces: readonly string[];
  stops: readonly string[];
  includeStop: boolean;
}): { keep: number; text: string; stop: string } | null {
  const text = options.pieces.join('');
  let at = -1;
  let stop = '';
  for (const s of options.stops) {
    if (s === '') continue;
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at || (i === at && s.length > stop.length))) {
      at = i;
      stop = s;
    }
  }
  if (at < 0) return null;
  const end = at + stop.length;
  let len = 0;
  let keep = 0;
  while (keep < options.pieces.length && len < end) len += options.pieces[keep++]!.length;
  return { keep, text: text.slice(0, options.includeStop ? end : at), stop };
}
