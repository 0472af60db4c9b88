/**
 * The agent's action format for shell tasks (docs/decisions/0021-harbor-tasks.md): one assistant
 * turn is one action. If the turn holds a fenced code block, the first block's body is the command
 * (models often fence; any prose around it is ignored); otherwise the whole turn is the command.
 * A command that is exactly `submit` ends the agent's work and runs the verifier. A command may
 * span lines (it is run as a bash script in the persistent shell).
 */
export type ShellAction = { kind: 'submit' } | { kind: 'command'; command: string } | { kind: 'empty' };

export const SUBMIT = 'submit';

const FENCE = /```[^\n`]*\n([\s\S]*?)(?:```|$)/;

export function parseShellAction(text: string): ShellAction {
  const fenced = FENCE.exec(text);
  const command = (fenced ? fenced[1]! : text).replace(/\s+$/, '').replace(/^\s*\n/, '');
  if (command.trim() === '') return { kind: 'empty' };
  if (command.trim() === SUBMIT) return { kind: 'submit' };
  return { kind: 'command', command };
}

/** The same in the tools format (docs/agent-format.md): the tools declare themselves; this says when to submit. */
export const TOOLS_ACTION_HINT =
  'Run commands with the bash tool (you will see their output and exit code); call submit when the task is done.';

/** What the agent is told about the format, appended to instruction.md (unless the task opts out). */
export const ACTION_HINT =
  'Reply with one shell command per turn (or one ```bash fenced block); you will see its output and exit code. ' +
  'Reply `submit` when the task is done.';
