import { timeoutAfterPoll } from './timeout-after-poll.ts';

/** The agent shell as the supervisor sees it (shell-script.ts, `P`): state `-` when none runs. */
export interface ShellState {
  /** /proc state letter: R running or runnable, S asleep, D in the kernel, … */
  state: string;
  /** CPU time so far (user + system), clock ticks of 1/100 s. */
  ticks: number;
  /** Children that are not zombies. */
  children: number;
}

/** The supervisor's reply to `P`: `SHELL <id> <state> <ticks> <children>`. */
export function parseShellState(reply: string): ShellState {
  const [, , state, ticks, children] = reply.split(' ');
  return { state: state!, ticks: Number(ticks), children: Number(children) };
}

/** CPU time (ticks) after the sweep that marks a loop; skipping the rest of a line costs milliseconds. */
const STUCK_CPU_TICKS = 30;
/** Polls in a row asleep with no living child that mark a shell waiting on nothing the sweep could end. */
const STUCK_ASLEEP_POLLS = 5;
const POLL_MS = 100;
/** A shell neither looping nor asleep this long after the sweep is stuck all the same. */
const DEADLINE_MS = 60_000;

/**
 * After a timed-out command's processes are swept: whether the agent shell is stuck in the command
 * (a builtin loop, a builtin blocked on a FIFO) rather than on its way to the marker, while
 * `waiting()` says the marker has not come. Judged by what the shell does, never by how long the
 * marker takes, which on a loaded machine can be any time at all (a fixed half second here
 * restarted healthy shells when the whole test suite ran on two cores): a shell that burns
 * STUCK_CPU_TICKS of CPU after the sweep is looping, and one asleep with no living child, poll
 * after poll, waits on nothing (a shell woken to reap its killed children is runnable, not
 * asleep, and a child still dying is counted until it is a zombie).
 */
export async function shellStuck(probe: () => Promise<ShellState>, waiting: () => boolean): Promise<boolean> {
  const first = await probe();
  let asleep = 0;
  for (const deadline = Date.now() + DEADLINE_MS; Date.now() < deadline;) {
    // After the pipes are read once more: a marker already sent is seen before the next probe.
    await new Promise((r) => timeoutAfterPoll(() => r(undefined), POLL_MS));
    if (!waiting()) return false;
    const now = await probe();
    if (now.state === '-') return false; // the shell exited: its loop prints the exit marker
    if (now.ticks - first.ticks >= STUCK_CPU_TICKS) return true;
    asleep = (now.state === 'S' || now.state === 'D') && now.children === 0 ? asleep + 1 : 0;
    if (asleep >= STUCK_ASLEEP_POLLS) return true;
  }
  return true;
}
