import type { TextPolicy } from '../../contracts/index.ts';
import { SUBMIT } from './action.ts';

/**
 * The harbor-oracle policy: Harbor's oracle agent as a text policy. It runs the task's
 * solution/solve.sh (bound at /solution only for this policy, HarborEnv exposeSolution) as its
 * one command, as Harbor runs it (non-interactive apt, its output kept in /logs/agent/oracle.txt
 * rather than shown), then submits. Its summary, should a long solution output ever force a compaction,
 * records that the solution ran, so it submits after the summary too.
 */
export const ORACLE_COMMAND = 'DEBIAN_FRONTEND=noninteractive bash /solution/solve.sh > /logs/agent/oracle.txt 2>&1';
const RAN = 'the reference solution has run; submit next';

export const harborOraclePolicy: TextPolicy = (messages) => {
  const last = messages[messages.length - 1];
  if (last?.role === 'user' && /\bsummar/i.test(last.content) && messages.length > 2) return RAN;
  const ran = messages.some(
    (m) =>
      (m.role === 'assistant' && m.content.includes(ORACLE_COMMAND)) || (m.role === 'user' && m.content.includes(RAN)),
  );
  return ran ? SUBMIT : ORACLE_COMMAND;
};
