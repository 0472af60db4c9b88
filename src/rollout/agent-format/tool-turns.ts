import type { ChatLayout } from '../chat-layout.ts';
import type { TurnRecord } from '../record.ts';
import type { AgentProtocol } from './agent-protocol.ts';

/**
 * A generated turn of the tools format, read for the episode (docs/agent-format.md): the action it
 * calls or the observation that says what was wrong, the turn's record, and the ids a later window
 * holds for it. Those are what the template renders for the turn: when they differ from the ids
 * the policy saw (a thinking-off turn whose prompt held the empty thinking block, a call written
 * with other spacing than the template's), the episode starts a new training segment there.
 */

export interface ActionTurn {
  /** The text action for the environment, or null when the turn is not one good call. */
  action: string | null;
  /** What the agent is told instead of an observation when action is null. */
  errorObservation: string | null;
  /** The turn's record, its offsets relative to the generated ids' first token. */
  record: Omit<TurnRecord, 'segment'>;
  /** The step's assistant part (prompt to observation opening) as the template renders it; null when the window's ids already are. */
  rewritten: number[] | null;
  /** The same part once a later user query drops its reasoning; null when equal to the window's (or rewritten) ids. */
  stripped: number[] | null;
}

/** End offset (in characters) of each token's text, decoded token by token. // [n] */
function charEnds(layout: ChatLayout, ids: readonly number[]): number[] {
  const out: number[] = [];
  let at = 0;
  for (const id of ids) {
    at += layout.tokenizer.decode([id]).length;
    out.push(at);
  }
  return out;
}

/** Tokens whose text starts before character c. */
function tokensBefore(ends: readonly number[], c: number): number {
  let i = 0;
  while (i < ends.length && (i === 0 ? 0 : ends[i - 1]!) < c) i++;
  return i;
}

export function readActionTurn(options: {
  layout: ChatLayout;
  agent: AgentProtocol;
  /** The generated ids, the stop id included when generated. */
  generated: readonly number[];
  /** The step's assistant part as the window holds it: prompt + generated + the seam after it. */
  stepIds: readonly number[];
}): ActionTurn {
  const { layout, agent, generated } = options;
  const ended = generated[generated.length - 1] === layout.actStop;
  const body = ended ? generated.slice(0, -1) : generated;
  const text = layout.tokenizer.decode(body);
  const turn = agent.readAction(text);
  const ends = charEnds(layout, body);
  const record: Omit<TurnRecord, 'segment'> = {
    stage: 'act',
    start: 0,
    end: generated.length,
    reasoningTokens: turn.reasoning === null ? 0 : tokensBefore(ends, turn.contentStart),
    call: {
      parsed: turn.error === null,
      ...(turn.error ? { cause: turn.error.cause } : {}),
      ...(turn.call ? { name: turn.call.name } : {}),
      ...(turn.callChars
        ? { span: [tokensBefore(ends, turn.callChars[0]), tokensBefore(ends, turn.callChars[1])] as [number, number] }
        : {}),
    },
  };
  const obsOpen = layout.format.text.observation.open;
  const asIs = layout.tokenizer.decode(options.stepIds);
  const kept = agent.historyText(turn, true) + obsOpen;
  const dropped = agent.historyText(turn, false) + obsOpen;
  const rewritten = kept === asIs ? null : layout.tokenizer.encode(kept);
  return {
    action: turn.action,
    errorObservation: turn.error ? `tool call error (${turn.error.cause}): ${turn.error.message}` : null,
    record,
    rewritten,
    stripped: dropped === kept ? null : layout.tokenizer.encode(dropped),
  };
}

/** An action turn's record at its place in segment `segment`: its generated ids start at `at`. */
export function placeTurnRecord(
  record: Omit<TurnRecord, 'segment'>,
  options: { segment: number; at: number; length: number },
): TurnRecord {
  const { segment, at, length } = options;
  return {
    ...record,
    segment,
    start: at,
    end: at + length,
    ...(record.call?.span
      ? {
          call: {
            ...record.call,
            span: [at + record.call.span[0], at + record.call.span[1]],
          },
        }
      : {}),
  };
}

/** A generated summary turn: the ids of the summary the next window sees, and the turn's record. */
export function readSummaryTurn(options: { layout: ChatLayout; agent: AgentProtocol; generated: readonly number[] }): {
  summaryIds: readonly number[];
  record: Omit<TurnRecord, 'segment'>;
} {
  const { layout, agent, generated } = options;
  const ended = generated[generated.length - 1] === layout.summaryStop;
  const body = ended ? generated.slice(0, -1) : generated;
  const text = layout.tokenizer.decode(body);
  const { reasoning, summary } = agent.readSummary(text);
  const record = { stage: 'summarize' as const, start: 0, end: generated.length, reasoningTokens: 0 };
  // Without a thinking block the generated ids are the summary, token for token (method §3).
  if (reasoning === null) return { summaryIds: generated, record };
  const ends = charEnds(layout, body);
  const contentStart = text.length - summary.length;
  return {
    summaryIds: layout.tokenizer.encode(summary.trim()),
    record: { ...record, reasoningTokens: tokensBefore(ends, contentStart) },
  };
}
