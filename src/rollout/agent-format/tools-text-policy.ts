import type { ChatMessage } from '../../contracts/index.ts';
import type { AgentProtocol } from './agent-protocol.ts';

/**
 * A scripted text policy (an expert, a summary writer) acting in the tools format
 * (docs/agent-format.md): it reads the window as in the text format (each earlier call turned
 * back into the text action it stood for) and its text is written as the template writes a call,
 * or a summary, with a short reasoning first when thinking is on.
 */

/** What a scripted policy says it is about to do (thinking on), from its action and its window. */
export type Reasoner = (options: {
  stage: 'act' | 'summarize';
  text: string;
  messages: readonly ChatMessage[];
}) => string;

/** The default reasoning: states the call or the summary it writes next. */
export const plainReasoner: Reasoner = ({ stage, text }) =>
  stage === 'act'
    ? `The window shows what I need for the next step, so I do it now: ${text.split('\n')[0]!.trim()}.`
    : 'The window is nearly full; I keep the goal and every fact the rest of the task still needs.';

/** The window's turns as a text-format policy reads them: calls back to their actions, system prompt as is. */
export function asTextMessages(agent: AgentProtocol, messages: readonly ChatMessage[]): ChatMessage[] {
  // With thinking off the prompt ends inside the assistant turn, after the empty thinking block: no turn of its own.
  const last = messages[messages.length - 1];
  const open = last?.role === 'assistant' && last.content !== '' && agent.promptText.endsWith(last.content);
  return (open ? messages.slice(0, -1) : messages).map((m) => {
    if (m.role !== 'assistant') return m;
    const turn = agent.readAction(m.content);
    return { role: m.role, content: turn.action ?? turn.content };
  });
}

/** The turn a scripted policy generates in the tools format, for its text in the text format. */
export function toolsTurn(options: {
  agent: AgentProtocol;
  stage: 'act' | 'summarize';
  text: string;
  messages: readonly ChatMessage[];
  reasoner?: Reasoner;
}): string {
  const { agent, stage, text, messages } = options;
  const reasoning = agent.thinking ? (options.reasoner ?? plainReasoner)({ stage, text, messages }) : null;
  return stage === 'act'
    ? agent.writeAction(reasoning, agent.tools.toCall(text))
    : agent.writeSummary(reasoning, text.trim());
}
