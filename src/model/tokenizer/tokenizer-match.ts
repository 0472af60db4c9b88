import { loadTokenizer, type LoadedTokenizer } from './load-tokenizer.ts';
import type { TokenizerRef } from './vocab-map.ts';

/** A checkpoint asked to run with a tokenizer other than its own (a user-fixable flag). */
export class TokenizerMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerMismatchError';
  }
}

/**
 * True when a model trained with `ref` speaks `tokenizer`'s ids: the same content hash (a
 * directory may have moved), or, for the append-only word vocabulary (decision 0001), the name.
 */
export function sameTokenizer(ref: TokenizerRef, tokenizer: LoadedTokenizer): boolean {
  if (ref.name === 'word' || tokenizer.name === 'word') return ref.name === tokenizer.name;
  return ref.sha256 !== undefined && ref.sha256 === tokenizer.sha256;
}

/** Refuses a checkpoint trained with another tokenizer, naming both (docs/decisions/0013). */
export function checkTokenizer(options: { what: string; ref: TokenizerRef; tokenizer: LoadedTokenizer }): void {
  const { ref, tokenizer } = options;
  if (sameTokenizer(ref, tokenizer)) return;
  const same = ref.name === tokenizer.name ? ' (same name, different files)' : '';
  throw new TokenizerMismatchError(
    `${options.what} was trained with tokenizer ${ref.name}, not ${tokenizer.name}${same}: ` +
      `pass --tokenizer ${ref.name}, or leave --tokenizer out to use the checkpoint's own`,
  );
}

/**
 * The tokenizer to use with a checkpoint: the one given (checked), or the checkpoint's own.
 */
export function tokenizerForCheckpoint(options: {
  what: string;
  ref: TokenizerRef;
  given?: string | undefined;
}): LoadedTokenizer {
  const tokenizer = loadTokenizer(options.given ?? options.ref.name);
  checkTokenizer({ what: options.what, ref: options.ref, tokenizer });
  return tokenizer;
}
