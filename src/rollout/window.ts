/**
 * One context window h (method §2): its tokens as the policy sees them, plus per-token training
 * data. Steps are remembered by their start offsets so a compaction can carry whole steps only.
 */
export class ContextWindow {
  readonly tokens: number[] = []; // [T]
  readonly lossMask: (0 | 1)[] = []; // [T]
  readonly logprobs: (number | null)[] = []; // [T]
  /** Offset of each step's first token (`<asst>`), oldest first. */
  readonly stepStarts: number[] = [];

  get length(): number {
    return this.tokens.length;
  }

  /** Template, context or observation tokens: never trained here (mask 0). */
  pushContext(tokens: readonly number[]): void {
    for (const t of tokens) {
      this.tokens.push(t);
      this.lossMask.push(0);
      this.logprobs.push(null);
    }
  }

  /** Tokens the policy generated in this window (mask 1, method §3). */
  pushGenerated(tokens: readonly number[], logprobs: readonly (number | null)[]): void {
    for (let i = 0; i < tokens.length; i++) {
      this.tokens.push(tokens[i]!);
      this.lossMask.push(1);
      this.logprobs.push(logprobs[i] ?? null);
    }
  }

  /** Marks that the next token starts a step (the `<asst>` before an action). */
  beginStep(): void {
    this.stepStarts.push(this.tokens.length);
  }

  /** Tokens of the newest n whole steps (n <= number of steps), oldest first. */
  tailTokens(n: number): number[] {
    if (n <= 0) return [];
    const from = this.stepStarts[this.stepStarts.length - n];
    if (from === undefined) throw new Error(`window holds ${this.stepStarts.length} steps, asked for ${n}`);
    return this.tokens.slice(from);
  }

  /** Length of the newest n whole steps. */
  tailLength(n: number): number {
    if (n <= 0) return 0;
    return this.tokens.length - this.stepStarts[this.stepStarts.length - n]!;
  }

  get stepCount(): number {
    return this.stepStarts.length;
  }
}

/**
 * How many tail steps the rebuilt window keeps: start from k (or fewer if the window has
 * fewer steps) and drop oldest first until C - |h'| >= T_comp (method §2).
 */
export function chooseTailSteps(options: {
  /** |s| (+ |u| if kept) + |u_resume(S)|. */
  headLength: number;
  window: ContextWindow;
  tailSteps: number;
  contextWindow: number;
  compactThreshold: number;
}): number {
  const { headLength, window, contextWindow, compactThreshold } = options;
  let n = Math.min(options.tailSteps, window.stepCount);
  while (n > 0 && contextWindow - (headLength + window.tailLength(n)) < compactThreshold) n--;
  return n;
}
