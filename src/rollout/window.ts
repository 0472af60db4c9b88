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
  /**
   * Per step, in the tools format (agent-format/): the offset where its assistant turn (and the
   * observation's opening) ends, and the ids the template renders for that part once a later user
   * query drops its reasoning (null: the same ids). A summary's context is built from these.
   */
  readonly assistantEnds: number[] = [];
  readonly stripped: (readonly number[] | null)[] = [];

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

  /** Ends the current step's assistant part (tools format); `stripped` as for the field. */
  endAssistant(stripped: readonly number[] | null): void {
    this.assistantEnds[this.stepStarts.length - 1] = this.tokens.length;
    this.stripped[this.stepStarts.length - 1] = stripped;
  }

  /** Generated tokens in this window (loss mask ones). */
  get generatedCount(): number {
    let n = 0;
    for (const m of this.lossMask) n += m;
    return n;
  }

  /**
   * The window as the template renders it before a later user query (the summary request): every
   * step's assistant part without its reasoning (tools format; the text format has none).
   */
  withoutReasoning(): number[] {
    if (this.stripped.every((x) => x === null || x === undefined)) return this.tokens.slice();
    const out = this.tokens.slice(0, this.stepStarts[0] ?? this.tokens.length);
    for (let s = 0; s < this.stepStarts.length; s++) {
      const start = this.stepStarts[s]!;
      const end = s + 1 < this.stepStarts.length ? this.stepStarts[s + 1]! : this.tokens.length;
      const mid = this.assistantEnds[s] ?? start;
      out.push(...(this.stripped[s] ?? this.tokens.slice(start, mid)), ...this.tokens.slice(mid, end));
    }
    return out;
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

/** Appends step s of `from` to `to` as context (mask 0), with its tools-format markers. */
export function copyStep(from: ContextWindow, s: number, to: ContextWindow): void {
  const start = from.stepStarts[s]!;
  const end = s + 1 < from.stepCount ? from.stepStarts[s + 1]! : from.length;
  to.beginStep();
  const base = to.length;
  to.pushContext(from.tokens.slice(start, end));
  const mid = from.assistantEnds[s];
  if (mid !== undefined) {
    to.assistantEnds[to.stepCount - 1] = base + (mid - start);
    to.stripped[to.stepCount - 1] = from.stripped[s] ?? null;
  }
}

/**
 * A copy of `w` whose newest step's assistant part is `rewritten` (as the template renders it in
 * every later context), the observation's opening included; `stripped` as for endAssistant.
 */
export function rewriteLastStep(
  w: ContextWindow,
  rewritten: readonly number[],
  stripped: readonly number[] | null,
): ContextWindow {
  const next = new ContextWindow();
  next.pushContext(w.tokens.slice(0, w.stepStarts[0]));
  for (let s = 0; s < w.stepCount - 1; s++) copyStep(w, s, next);
  next.beginStep();
  next.pushContext(rewritten);
  next.endAssistant(stripped);
  return next;
}
