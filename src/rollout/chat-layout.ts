import type { Tokenizer } from './types.ts';

/**
 * The chat layout of the built-in tasks, at the token level (method §2):
 *
 *   <bos> <sys> system <eot>  <user> instruction <eot>  <asst> action <eot>  <obs> observation <eot>  <asst> ...
 *
 * q_sum is a user turn followed by the assistant marker the summary is generated after;
 * u_resume(S) is a user turn carrying the summary into the rebuilt window.
 */

/** Configurable template text (words of the closed vocabulary, src/model/vocab.ts). */
export interface ChatTemplates {
  /** The system prompt s. */
  system: string;
  /** The summary instruction q_sum (its text; the turn markers are added). */
  summaryInstruction: string;
  /** Words placed before the summary inside u_resume(S). */
  resumePrefix: string;
}

export const DEFAULT_CHAT_TEMPLATES: Readonly<ChatTemplates> = Object.freeze({
  system: 'you are an agent',
  summaryInstruction: 'summarize the task goal and the facts needed so far',
  resumePrefix: 'continue from the summary :',
});

/** Special token ids of the layout. */
export interface LayoutIds {
  bos: number;
  sys: number;
  user: number;
  asst: number;
  obs: number;
  eot: number;
  cut: number;
}

/**
 * Pre-encoded templates. Everything the runtime appends to a window comes from here, so the
 * token ids are fixed once and never re-tokenized (method §3: token-in/token-out).
 */
export interface ChatLayout {
  readonly tokenizer: Tokenizer;
  readonly ids: LayoutIds;
  /** `<bos> <sys> system <eot>`. */
  readonly systemTurn: readonly number[];
  /** `<user> summaryInstruction <eot> <asst>`: q_sum, ready for the summary to be generated. */
  readonly summaryPrompt: readonly number[];
  /** `<user> resumePrefix`: u_resume(S) is this, then S without its final <eot>, then <eot>. */
  readonly resumeOpen: readonly number[];
}

export function createChatLayout(options: { tokenizer: Tokenizer; templates: ChatTemplates }): ChatLayout {
  const { tokenizer, templates } = options;
  const ids: LayoutIds = {
    bos: tokenizer.specialId('<bos>'),
    sys: tokenizer.specialId('<sys>'),
    user: tokenizer.specialId('<user>'),
    asst: tokenizer.specialId('<asst>'),
    obs: tokenizer.specialId('<obs>'),
    eot: tokenizer.specialId('<eot>'),
    cut: tokenizer.specialId('<cut>'),
  };
  return {
    tokenizer,
    ids,
    systemTurn: [ids.bos, ids.sys, ...tokenizer.encode(templates.system), ids.eot],
    summaryPrompt: [ids.user, ...tokenizer.encode(templates.summaryInstruction), ids.eot, ids.asst],
    resumeOpen: [ids.user, ...tokenizer.encode(templates.resumePrefix)],
  };
}

/** `<user> instruction <eot>`. */
export function encodeTaskTurn(layout: ChatLayout, instruction: string): number[] {
  return [layout.ids.user, ...layout.tokenizer.encode(instruction), layout.ids.eot];
}

/**
 * `<obs> observation <eot>`, the content capped at maxTokens: a longer observation keeps its
 * first maxTokens - 1 tokens and ends with `<cut>` so the policy can see it was cut (method §2).
 */
export function encodeObservationTurn(options: { layout: ChatLayout; observation: string; maxTokens: number }): {
  tokens: number[];
  /** Content length before cutting. */
  originalTokens: number;
  cut: boolean;
} {
  const { layout, observation, maxTokens } = options;
  const content = layout.tokenizer.encode(observation);
  const cut = content.length > maxTokens;
  const kept = cut ? [...content.slice(0, maxTokens - 1), layout.ids.cut] : content;
  return { tokens: [layout.ids.obs, ...kept, layout.ids.eot], originalTokens: content.length, cut };
}

/** u_resume(S): the summary's own final <eot> (if generated) is reused as the turn's end. */
export function encodeResumeTurn(layout: ChatLayout, summary: readonly number[]): number[] {
  const body = summary.length > 0 && summary[summary.length - 1] === layout.ids.eot ? summary.slice(0, -1) : summary;
  return [...layout.resumeOpen, ...body, layout.ids.eot];
}

/** Longest possible u_resume(S) for a summary of at most summaryMaxTokens tokens. */
export function maxResumeTurnLength(layout: ChatLayout, summaryMaxTokens: number): number {
  return layout.resumeOpen.length + summaryMaxTokens + 1;
}

/**
 * Longest possible step with its markers: `<asst>` + action (the sampler's cap, its <eot>
 * included) + a forced <eot> when the action hit the cap without one; `<obs>` + content + `<eot>`.
 */
export function maxStepLength(options: { maxActionTokens: number; maxObservationTokens: number }): number {
  return options.maxActionTokens + 2 + options.maxObservationTokens + 2;
}
