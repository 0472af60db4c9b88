import type { ChatMessage, Reasoner } from '../../contracts/index.ts';
import type { DensePart } from '../../env/family.ts';
import type { AgentProtocol } from '../../rollout/agent-format/agent-protocol.ts';
import { toolsTurn } from '../../rollout/agent-format/tools-text-policy.ts';
import { encodeContent, type ChatLayout } from '../../rollout/chat-layout.ts';
import type { Example } from './sft-loss.ts';

// How the dense warm-up (dense-warmup.ts) lays a form's text parts out as tokens; the trimmed
// vocabulary (experiments/train/trimmed-vocabulary.ts) reads the same layout.

/**
 * Text parts → tokens and supervised positions, laid out with the runtime's chat layout: the
 * format's prefix (`<bos>`; the whole system turn when the first part is an instruction, the system
 * turn without tools when the format has no prefix), then each
 * part. Turn parts are encoded on their own between the layout's markers, as the runtime encodes a
 * turn; a run of 'context' / 'target' parts is one text, each part encoded with the space that
 * joins it to the previous one (so a target reads as it would inside an action: `answer 14`).
 * Summaries get q_sum before and the summary stop id after. A reply's stop id is its turn end
 * (`<eot>`, `<|im_end|>`), supervised; a GLM-style layout has none, so there the reply's end is not
 * supervised here (episodes teach it). Parts that would pass maxTokens are left out, whole, with
 * everything after them.
 *
 * In the tools format a reply or summary is written as the family's expert writes it: its reasoning
 * from `reasoner` (the family's, else the plain one) over the chat so far. With thinking on, an
 * assistant turn that a summary follows in the same window is laid out as the template renders it
 * once the summary request (a user query) comes after it: without its reasoning, as the runtime's
 * summary context holds it (rollout/window.ts withoutReasoning). Such a reply is read, not
 * supervised: supervised without its reasoning it would teach acting without thinking.
 */
export function encodeDense(
  parts: readonly DensePart[],
  layout: ChatLayout,
  maxTokens: number,
  reasoner?: Reasoner,
): Example {
  const { tokenizer, format } = layout;
  const t = format.turns;
  // A format without a prefix (Qwen3 has no BOS) starts with its system turn instead: a sequence
  // that opens on a content token gives attention no constant first position to rest on, and the
  // recall form opened on its first key, which then encoded unlike every later (spaced) key.
  // A form that is not an episode (no instruction: the recall form, lookups) opens without the
  // tools format's tool schemas: they teach lookups, and the episode forms and the episode SFT teach
  // the format.
  const opening =
    parts[0]?.kind === 'instruction'
      ? layout.systemTurn
      : format.prefix.length === 0
        ? layout.bareSystemTurn
        : format.prefix;
  const tokens: number[] = [...opening];
  const answerAt: number[] = [];
  const supervised = (xs: readonly number[]): void => {
    for (const x of xs) {
      answerAt.push(tokens.length);
      tokens.push(x);
    }
  };
  // Inside a run of context / target text. A leading context part reads as mid-text too (a subword
  // tokenizer's ` e`, as every key after it; the word vocabulary has no such difference).
  let inRun = true;
  // The chat of the current window, as the family's reasoner reads it.
  let messages: ChatMessage[] = [];
  const reasoningDropped = dropsReasoning(parts, layout.agent);
  for (const [i, p] of parts.entries()) {
    const text = p.text.trim();
    if (p.kind === 'context' || p.kind === 'target') {
      const enc = tokenizer.encode(inRun && !tokenizer.wordLevel ? ` ${text}` : text);
      if (tokens.length + enc.length > maxTokens) break;
      if (p.kind === 'target') supervised(enc);
      else tokens.push(...enc);
      inRun = true;
      continue;
    }
    inRun = false;
    const agent = layout.agent;
    if (p.kind === 'instruction') messages = [];
    const stripped = reasoningDropped[i] ? withoutReasoning(layout, agent!, text) : null;
    if (stripped) {
      if (tokens.length + stripped.length > maxTokens) break;
      tokens.push(...stripped);
      messages.push({ role: 'assistant', content: text });
      continue;
    }
    // The tools format writes an assistant turn as its call and a summary as the template does.
    const turnText =
      agent && (p.kind === 'reply' || p.kind === 'action' || p.kind === 'summary')
        ? asToolsTurn(agent, p.kind === 'summary' ? 'summarize' : 'act', text, {
            messages: p.kind === 'summary' ? [...messages, { role: 'user', content: 'summarize' }] : messages,
            reasoner,
          })
        : text;
    messages.push({
      role: p.kind === 'instruction' ? 'user' : p.kind === 'observation' ? 'observation' : 'assistant',
      content: text,
    });
    const enc = encodeContent(layout, turnText);
    if (p.kind === 'reply') {
      if (tokens.length + layout.actionOpen.length + enc.length + t.assistant.close.length > maxTokens) break;
      // A call is supervised whole: its first words are the call's syntax, not the decision.
      const n = p.words === undefined || agent ? enc.length : replyPrefixTokens(layout, text, p.words);
      tokens.push(...layout.actionOpen);
      supervised(enc.slice(0, n));
      if (n === enc.length && t.assistant.close.length > 0) {
        supervised([t.assistant.close[0]!]);
        tokens.push(...t.assistant.close.slice(1));
      } else tokens.push(...enc.slice(n), ...t.assistant.close);
      continue;
    }
    if (p.kind === 'summary') {
      if (tokens.length + layout.summaryPrompt.length + enc.length + 1 > maxTokens) break;
      tokens.push(...layout.summaryPrompt);
      supervised([...enc, layout.summaryStop]);
      continue;
    }
    const turn = p.kind === 'instruction' ? t.user : p.kind === 'action' ? t.assistant : t.observation;
    const open = p.kind === 'action' ? layout.actionOpen : turn.open;
    if (tokens.length + open.length + enc.length + turn.close.length > maxTokens) break;
    tokens.push(...open, ...enc, ...turn.close);
  }
  return { tokens: Int32Array.from(tokens), answerAt };
}

/** A dense part's turn in the tools format; text no tool expresses (an injected mistake) stays as it is. */
function asToolsTurn(
  agent: AgentProtocol,
  stage: 'act' | 'summarize',
  text: string,
  chat: { messages: readonly ChatMessage[]; reasoner: Reasoner | undefined },
): string {
  try {
    return toolsTurn({ agent, stage, text, ...chat });
  } catch {
    return text;
  }
}

/**
 * Per part: an assistant turn (reply or action) that a summary follows before the next window's
 * instruction, in the tools format with thinking on, where the summary request drops its reasoning.
 */
function dropsReasoning(parts: readonly DensePart[], agent: AgentProtocol | null | undefined): boolean[] {
  const out = parts.map(() => false);
  if (!agent?.thinking) return out;
  let summaryAhead = false;
  for (let i = parts.length - 1; i >= 0; i--) {
    const kind = parts[i]!.kind;
    if (kind === 'summary') summaryAhead = true;
    else if (kind === 'instruction') summaryAhead = false;
    else if (kind === 'reply' || kind === 'action') out[i] = summaryAhead;
  }
  return out;
}

/**
 * The ids of an assistant turn as the template renders it before a later user query, from its
 * opening to the observation's (the runtime's stripped step, rollout/agent-format/tool-turns.ts);
 * null for text no tool expresses, which is laid out as it is.
 */
function withoutReasoning(layout: ChatLayout, agent: AgentProtocol, text: string): number[] | null {
  let call;
  try {
    call = agent.tools.toCall(text);
  } catch {
    return null;
  }
  return layout.tokenizer.encode(agent.historyText({ reasoning: null, content: '', call }, false));
}

/** Ids of a reply's first `words` words: a prefix of the whole reply's encoding (a family bug otherwise). */
function replyPrefixTokens(layout: ChatLayout, text: string, words: number): number {
  const whole = encodeContent(layout, text);
  const head = encodeContent(layout, text.split(/\s+/).slice(0, words).join(' '));
  if (head.length > whole.length || head.some((x, i) => x !== whole[i]))
    throw new Error(
      `internal: the first ${words} words of the reply ${JSON.stringify(text)} do not encode to a prefix of it`,
    );
  return head.length;
}
