import type { Tokenizer } from '../../contracts/index.ts';
import { VOCAB } from '../../words/vocab.ts';

/** Raised when text holds a word outside the closed vocabulary (a task or template bug). */
export class UnknownWordError extends Error {
  constructor(readonly word: string) {
    super(
      `the word ${JSON.stringify(word)} is not in the built-in vocabulary (src/words/vocab.ts): add it there or change the text`,
    );
    this.name = 'UnknownWordError';
  }
}

/**
 * Word-level tokenizer over a closed vocabulary: words are separated by spaces, '\n' is a token,
 * special tokens are written inline as `<name>`. decode(encode(t)) equals t with whitespace
 * normalized (single spaces, no spaces around newlines). See docs/decisions/0001-word-tokenizer.md.
 */
export class WordTokenizer implements Tokenizer {
  readonly vocab: readonly string[];
  readonly wordLevel = true;
  private readonly ids = new Map<string, number>();

  constructor(vocab: readonly string[] = VOCAB) {
    if (vocab.length > 65535) throw new Error('vocabulary too large for this tokenizer');
    this.vocab = vocab;
    vocab.forEach((w, i) => {
      if (this.ids.has(w)) throw new Error(`duplicate vocabulary entry ${JSON.stringify(w)}`);
      this.ids.set(w, i);
    });
  }

  get vocabSize(): number {
    return this.vocab.length;
  }

  has(word: string): boolean {
    return this.ids.has(word);
  }

  encode(text: string): number[] {
    const out: number[] = [];
    const lines = text.split('\n');
    lines.forEach((line, li) => {
      if (li > 0) out.push(this.ids.get('\n')!);
      for (const word of line.split(/\s+/)) {
        if (word === '') continue;
        const id = this.ids.get(word);
        if (id === undefined) throw new UnknownWordError(word);
        out.push(id);
      }
    });
    return out;
  }

  decode(tokens: ArrayLike<number>): string {
    let s = '';
    let prevNewline = true;
    for (let i = 0; i < tokens.length; i++) {
      const w = this.vocab[tokens[i]!];
      if (w === undefined)
        throw new Error(`token id ${tokens[i]} is outside the vocabulary (size ${this.vocab.length})`);
      if (w === '\n') {
        s += '\n';
        prevNewline = true;
      } else {
        s += prevNewline ? w : ` ${w}`;
        prevNewline = false;
      }
    }
    return s;
  }

  specialId(name: string): number {
    const id = this.ids.get(name);
    if (id === undefined) throw new Error(`special token ${JSON.stringify(name)} is not in the vocabulary`);
    return id;
  }
}
