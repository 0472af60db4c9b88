import type { EpisodeRecord } from '../record.ts';
import { TOOL_CALL_CAUSES } from './agent-protocol.ts';

/**
 * Per-iteration metrics of the tools format (docs/agent-format.md), from the records' turns:
 * reasoning tokens per execution turn (Figure 4's reasoning panel) and per summary, the call's
 * tokens per execution turn, and tool-call errors (all, their rate, and one key per cause, rollout/tool_call_errors_<cause>). Empty
 * for records of the text format, whose runs keep their metric keys.
 */
export function turnMetrics(records: readonly EpisodeRecord[]): Record<string, number> {
  let acts = 0;
  let summaries = 0;
  let actReasoning = 0;
  let summaryReasoning = 0;
  let callTokens = 0;
  let errors = 0;
  const byCause = new Map<string, number>(TOOL_CALL_CAUSES.map((c) => [c, 0]));
  let tools = false;
  for (const r of records) {
    if (r.agentFormat !== 'tools' || !r.turns) continue;
    tools = true;
    for (const t of r.turns) {
      if (t.stage === 'summarize') {
        summaries++;
        summaryReasoning += t.reasoningTokens;
        continue;
      }
      acts++;
      actReasoning += t.reasoningTokens;
      if (t.call?.span) callTokens += t.call.span[1] - t.call.span[0];
      if (t.call && !t.call.parsed) {
        errors++;
        const cause = t.call.cause ?? 'unknown';
        byCause.set(cause, (byCause.get(cause) ?? 0) + 1);
      }
    }
  }
  if (!tools) return {};
  const per = (x: number, n: number) => (n > 0 ? x / n : Number.NaN);
  return {
    'rollout/reasoning_tokens_per_turn': per(actReasoning, acts),
    'rollout/summary_reasoning_tokens': per(summaryReasoning, summaries),
    'rollout/call_tokens_per_turn': per(callTokens, acts),
    'rollout/tool_call_errors': errors,
    'rollout/tool_call_error_rate': per(errors, acts),
    ...Object.fromEntries([...byCause].map(([cause, n]) => [`rollout/tool_call_errors_${cause}`, n])),
  };
}
