import type { ChatLayout } from '../chat-layout.ts';
import type { AgentProtocol } from './agent-protocol.ts';

/**
 * The tools format's token sizes (docs/agent-format.md). Rollout sizes are given in the text
 * format's terms (an action's own tokens, a window that holds so many steps); the tools format
 * adds what it costs on top, so a run in either format compacts after about as many steps:
 *   - the system turn grows by the tools' declaration;
 *   - every action by its call's syntax (the longest tool's call with empty arguments) and, with
 *     thinking on, by the thinking budget; with thinking off the prompt's empty thinking block;
 *   - a summary by the thinking budget (thinking on);
 *   - T_comp by the growth of a step and a summary, C by T_comp's growth, the system turn's, and
 *     the step growth times the fewest steps the text window holds (C - T_comp over its longest step).
 */
/** The token-unit sizes (config.ts TokenUnits, named here so the config may import this file). */
type TokenUnits = Record<
  'contextWindow' | 'compactThreshold' | 'summaryMaxTokens' | 'maxActionTokens' | 'maxObservationTokens',
  number
>;

export function toolsTokenUnits(options: {
  units: TokenUnits;
  text: ChatLayout;
  tools: ChatLayout;
  agent: AgentProtocol;
  /** Budget for a thinking block (thinking on). */
  thinkingTokens: number;
}): TokenUnits {
  const { units, text, tools, agent } = options;
  const encode = (s: string) => tools.tokenizer.encode(s).length;
  const callSyntax = Math.max(
    ...agent.tools.tools.map((t) => {
      const empty = Object.fromEntries(Object.keys(t.function.parameters.properties).map((k) => [k, '']));
      return encode(agent.writeAction(null, { name: t.function.name, arguments: empty }));
    }),
  );
  const thinking = agent.thinking ? options.thinkingTokens : 0;
  const promptGrowth = tools.actionOpen.length - text.actionOpen.length;
  const actionGrowth = callSyntax + thinking;
  const stepGrowth = actionGrowth + promptGrowth;
  const markers = text.actionOpen.length + text.format.turns.assistant.close.length;
  const textStep =
    units.maxActionTokens + units.maxObservationTokens + markers + text.format.turns.observation.open.length;
  const room = units.contextWindow - units.compactThreshold;
  const steps = Math.max(1, Math.floor(room / textStep));
  const thresholdGrowth = stepGrowth + thinking + (tools.summaryPrompt.length - text.summaryPrompt.length);
  const systemGrowth = tools.systemTurn.length - text.systemTurn.length;
  return {
    contextWindow: units.contextWindow + thresholdGrowth + systemGrowth + steps * stepGrowth,
    compactThreshold: units.compactThreshold + thresholdGrowth,
    summaryMaxTokens: units.summaryMaxTokens + thinking,
    maxActionTokens: units.maxActionTokens + actionGrowth,
    maxObservationTokens: units.maxObservationTokens,
  };
}
