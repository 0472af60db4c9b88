import { deriveChatFormat, type ChatFormat, type ChatTemplateSource } from './chat-format.ts';
import type { ActionTools, Tokenizer } from '../contracts/index.ts';
import { createAgentProtocol, type AgentProtocol } from './agent-format/agent-protocol.ts';

/**
 * The chat layout of the runtime, at the token level (method §2), built from a ChatFormat
 * (chat-format.ts: the model's own template's turn pieces). With the word tokenizer:
 *
 *   <bos> <sys> system <eot>  <user> instruction <eot>  <asst> action <eot>  <obs> observation <eot>  <asst> ...
 *
 * With Qwen3: `<|im_start|>system\n s <|im_end|>\n <|im_start|>user\n u <|im_end|>\n
 * <|im_start|>assistant\n a <|im_end|>\n <|im_start|>user\n<tool_response>\n o \n</tool_response><|im_end|>\n ...`
 *
 * q_sum is a user turn followed by the generation prompt the summary is generated after;
 * u_resume(S) is a user turn carrying the summary into the rebuilt window. Each turn's text is
 * encoded on its own between the fixed marker ids, which is what makes the ids equal the
 * template's rendering encoded turn by turn.
 */

/** Configurable template text (for the word tokenizer: words of its closed vocabulary, src/words/vocab.ts). */
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

/** Written at the end of a cut observation (the word vocabulary has it as one token). */
export const CUT_MARKER = ' <cut>';

/**
 * Pre-encoded templates. Everything the runtime appends to a window comes from here, so the
 * token ids are fixed once and never re-tokenized (method §3: token-in/token-out).
 */
export interface ChatLayout {
  /** The tokenizer's name ('word', 'qwen3', a directory): what records say their ids are. */
  readonly tokenizerName: string;
  readonly tokenizer: Tokenizer;
  readonly format: ChatFormat;
  /** prefix + system turn (`<bos> <sys> system <eot>`); in the tools format with the tools declared. */
  readonly systemTurn: readonly number[];
  /**
   * The system turn without tools (the text format's, whatever the format): the dense warm-up's
   * lookup forms open with it, since 200-odd tokens of tool schemas before every recall probe made
   * that stage 7x longer and kept its recall accuracy near 0 (experiments/sft/dense-warmup.ts).
   */
  readonly bareSystemTurn: readonly number[];
  /** The generation prompt an action is generated after (`<asst>`). */
  readonly actionOpen: readonly number[];
  /** Assistant turn end + observation turn start (`<eot> <obs>`); its first id is the action stop. */
  readonly actionSeam: readonly number[];
  /** q_sum with its markers and the generation prompt (`<user> summaryInstruction <eot> <asst>`). */
  readonly summaryPrompt: readonly number[];
  /** Assistant turn end + user turn start; its first id is the summary stop. */
  readonly summarySeam: readonly number[];
  /** `<user> resumePrefix`: u_resume(S) is this, then S without its stop, then the user turn end. */
  readonly resumeOpen: readonly number[];
  /** Generation of an action stops after this id (the word layout's <eot>, Qwen3's <|im_end|>). */
  readonly actStop: number;
  /** Generation of a summary stops after this id. */
  readonly summaryStop: number;
  /**
   * The tools format (agent-format/agent-protocol.ts): tools declared in the system turn, actions
   * as the template's tool calls, thinking on or off. Null: the text format (a turn is the action).
   */
  readonly agent: AgentProtocol | null;
}

/** How the agent acts: its turn is the action's text, or a tool call in its model's syntax. */
export interface AgentFormatChoice {
  tools: ActionTools;
  thinking: boolean;
}

const formats = new WeakMap<ChatTemplateSource, ChatFormat>();

/** The source's chat format, derived once per loaded tokenizer. */
export function chatFormatOf(source: ChatTemplateSource): ChatFormat {
  let f = formats.get(source);
  if (!f) {
    f = deriveChatFormat(source);
    formats.set(source, f);
  }
  return f;
}

export function createChatLayout(options: {
  tokenizer: ChatTemplateSource;
  templates: ChatTemplates;
  /** The tools format; absent: the text format. */
  agent?: AgentFormatChoice;
}): ChatLayout {
  const { templates } = options;
  const agent = options.agent
    ? createAgentProtocol({
        source: options.tokenizer,
        format: chatFormatOf(options.tokenizer),
        tools: options.agent.tools,
        thinking: options.agent.thinking,
      })
    : null;
  const format = agent ? agent.format : chatFormatOf(options.tokenizer);
  const tokenizer = options.tokenizer.tokenizer;
  const t = format.turns;
  const content = (text: string) => tokenizer.encode(text.trim());
  const actionSeam = [...t.assistant.close, ...t.observation.open];
  const summarySeam = [...t.assistant.close, ...t.user.open];
  // A word-level tokenizer joins words with spaces; a BPE needs a real boundary before the summary's
  // first generated token, so that prefix + S encodes turn by turn (a newline is one in every BPE we know).
  const separator = tokenizer.wordLevel ? '' : '\n';
  // The tools format's generation prompt may carry the template's empty thinking block (thinking off).
  const prompt = agent ? tokenizer.encode(agent.promptText) : t.assistant.open;
  const bareSystemTurn = [...format.prefix, ...t.system.open, ...content(templates.system), ...t.system.close];
  return {
    tokenizerName: options.tokenizer.name,
    tokenizer,
    format,
    systemTurn: agent ? tokenizer.encode(agent.systemText(templates.system)) : bareSystemTurn,
    bareSystemTurn,
    actionOpen: prompt,
    actionSeam,
    summaryPrompt: [...t.user.open, ...content(templates.summaryInstruction), ...t.user.close, ...prompt],
    summarySeam,
    resumeOpen: [...t.user.open, ...tokenizer.encode(templates.resumePrefix.trim() + separator)],
    actStop: actionSeam[0]!,
    summaryStop: summarySeam[0]!,
    agent,
  };
}

/** A turn's text as the runtime encodes it: trimmed, on its own. */
export function encodeContent(layout: ChatLayout, text: string): number[] {
  return layout.tokenizer.encode(text.trim());
}

/** `<user> instruction <eot>`. */
export function encodeTaskTurn(layout: ChatLayout, instruction: string): number[] {
  const u = layout.format.turns.user;
  return [...u.open, ...encodeContent(layout, instruction), ...u.close];
}

/**
 * What follows a generated action as context: the rest of the action seam after the stop id the
 * policy generated (`<obs>`), or the whole seam when generation hit the cap without it.
 */
export function afterAction(layout: ChatLayout, generated: readonly number[]): readonly number[] {
  return generated[generated.length - 1] === layout.actStop ? layout.actionSeam.slice(1) : layout.actionSeam;
}

/**
 * The observation's content and turn end (`observation <eot>`; its opening came with the action
 * seam), the content capped at maxTokens: a longer observation is cut at the text level and ends
 * with CUT_MARKER so the policy can see it was cut (method §2); the kept ids are the encoding of
 * that text, so they still equal the template's rendering encoded.
 */
export function encodeObservationTurn(options: { layout: ChatLayout; observation: string; maxTokens: number }): {
  tokens: number[];
  /** Content length before cutting. */
  originalTokens: number;
  cut: boolean;
} {
  const { layout, maxTokens } = options;
  const close = layout.format.turns.observation.close;
  if (layout.format.observationContent === 'json-string') return jsonStringObservation(options);
  const content = encodeContent(layout, options.observation);
  if (content.length <= maxTokens)
    return { tokens: [...content, ...close], originalTokens: content.length, cut: false };
  const { tokenizer } = layout;
  let n = maxTokens - tokenizer.encode(CUT_MARKER).length;
  let kept = n > 0 ? tokenizer.encode(tokenizer.decode(content.slice(0, n)) + CUT_MARKER) : [];
  while (n > 0 && kept.length > maxTokens) {
    n--;
    kept = n > 0 ? tokenizer.encode(tokenizer.decode(content.slice(0, n)) + CUT_MARKER) : [];
  }
  if (n <= 0) kept = content.slice(0, maxTokens); // a cap too small for the marker: cut without it
  return { tokens: [...kept, ...close], originalTokens: content.length, cut: true };
}

/**
 * An observation the template writes as a JSON string's inside (Llama 3.1): the text escaped; a
 * longer one is cut in its text, before escaping, so that what is kept is still an escaped text.
 */
function jsonStringObservation(options: { layout: ChatLayout; observation: string; maxTokens: number }): {
  tokens: number[];
  originalTokens: number;
  cut: boolean;
} {
  const { layout, maxTokens } = options;
  const close = layout.format.turns.observation.close;
  const enc = (s: string) => layout.tokenizer.encode(JSON.stringify(s).slice(1, -1));
  const text = options.observation.trim();
  const content = enc(text);
  if (content.length <= maxTokens)
    return { tokens: [...content, ...close], originalTokens: content.length, cut: false };
  let n = Math.floor((text.length * maxTokens) / content.length);
  let kept = enc(text.slice(0, n) + CUT_MARKER);
  while (n > 0 && kept.length > maxTokens) {
    n = Math.max(0, n - (kept.length - maxTokens));
    kept = n > 0 ? enc(text.slice(0, n) + CUT_MARKER) : [];
  }
  return { tokens: [...kept.slice(0, maxTokens), ...close], originalTokens: content.length, cut: true };
}

/** u_resume(S): the summary's own stop id (if generated) is not repeated; the user turn end closes it. */
export function encodeResumeTurn(layout: ChatLayout, summary: readonly number[]): number[] {
  const body =
    summary.length > 0 && summary[summary.length - 1] === layout.summaryStop ? summary.slice(0, -1) : summary;
  return [...layout.resumeOpen, ...body, ...layout.format.turns.user.close];
}

/** Longest possible u_resume(S) for a summary of at most summaryMaxTokens tokens. */
export function maxResumeTurnLength(layout: ChatLayout, summaryMaxTokens: number): number {
  return layout.resumeOpen.length + summaryMaxTokens + layout.format.turns.user.close.length;
}

/** Marker ids around an action (generation prompt + turn end) and around an observation (turn start + end). */
export function stepMarkers(layout: ChatLayout): { action: number; observation: number } {
  const t = layout.format.turns;
  return {
    action: layout.actionOpen.length + t.assistant.close.length,
    observation: t.observation.open.length + t.observation.close.length,
  };
}

/**
 * Longest possible step with its markers: the generation prompt + action (the sampler's cap, its
 * stop id included) + the action seam (all of it when the action hit the cap without a stop);
 * the observation content + its turn end.
 */
export function maxStepLength(options: {
  layout: ChatLayout;
  maxActionTokens: number;
  maxObservationTokens: number;
}): number {
  const m = stepMarkers(options.layout);
  return options.maxActionTokens + m.action + options.maxObservationTokens + m.observation;
}
