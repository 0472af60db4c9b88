import { Writable, type Readable } from 'node:stream';
import { BoundedLines } from './bounded-lines.ts';

/**
 * The pipes between the host and the sandbox's supervisor (shell-script.ts), for the two ways a
 * supervisor is started: with its five pipes of its own (bwrap passes node's extra stdio through),
 * or muxed over another program's stdin and stderr (`docker run -i`), where host lines carry a
 * one-letter tag and the replies share stderr with whatever else is printed there.
 */

/**
 * The sandbox's first process as the host holds it: a child process (bwrap), or a container's
 * attached streams (docker-backend.ts), which behave as one.
 */
export interface SupervisorProcess {
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: readonly (Readable | Writable | null | undefined)[];
  readonly pid?: number | undefined;
  kill(signal?: NodeJS.Signals): boolean;
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}

/** How the sandbox's first process is started: a command line, or a process already started. */
export interface SandboxLaunch {
  command: string;
  args: readonly string[];
  /** Already started (its stdio muxed): used instead of spawning `command`, which then only names it. */
  started?: SupervisorProcess;
  /** Only stdin, stdout and stderr reach the supervisor (shell-script.ts, muxed). */
  muxed?: boolean;
  /** Host uid/gid to run the launcher as. */
  ids?: { uid: number; gid: number } | undefined;
}

/** The supervisor's replies (shell-script.ts). */
const REPLY_LINE = /^(READY|SWEPT|ALIVE|RESTARTED|SHELL|BAD|ERROR)( |$)/;

/** Longest stderr line kept whole; the agent can write there (docs/sandbox.md, "Bounds"). */
const MAX_STDERR_LINE_BYTES = 4096;

/** The stdio a launch needs. */
export const launchStdio = (launch: SandboxLaunch): ('pipe' | 'ignore')[] =>
  launch.muxed ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'];

/**
 * Wires a started child: returns the streams control lines and agent lines are written to, and
 * hands reply bytes and diagnostics (stderr that is not a reply) to the callbacks.
 */
export function shellPipes(
  child: SupervisorProcess,
  launch: SandboxLaunch,
  on: { reply: (bytes: Buffer) => void; diagnostic: (text: string) => void },
): { control: Writable; commands: Writable } {
  const stdin = child.stdin!;
  stdin.on('error', () => undefined); // EPIPE after exit: seen via 'exit'
  if (!launch.muxed) {
    const commands = child.stdio[3] as Writable;
    commands.on('error', () => undefined);
    child.stderr!.on('data', (d: Buffer) => on.diagnostic(d.toString('utf8')));
    (child.stdio[4] as Readable).on('data', on.reply);
    return { control: stdin, commands };
  }
  // stderr carries the replies and whatever else bash or the engine's client prints there
  // (job notices, errors): only reply lines are replies, the rest is diagnostics.
  // A line too long to be a reply still counts as one when it starts like one (it cannot match).
  const lines = new BoundedLines(MAX_STDERR_LINE_BYTES);
  child.stderr!.on('data', (d: Buffer) => {
    for (const { text, truncated } of lines.push(d)) {
      if (REPLY_LINE.test(text)) on.reply(Buffer.from(truncated ? 'BAD\n' : `${text}\n`));
      else on.diagnostic(`${text}\n`);
    }
  });
  // One stream in, tagged per line; every write the sandbox makes is whole lines.
  return { control: taggedLines(stdin, 'C'), commands: taggedLines(stdin, 'A') };
}

/** A Writable that writes each line given to it to `out` behind a one-letter tag. */
function taggedLines(out: Writable, tag: string): Writable {
  return new Writable({
    write(chunk: Buffer | string, _enc, done) {
      const text = chunk.toString();
      const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
      out.write(lines.map((l) => `${tag}${l}\n`).join(''), () => done());
    },
  });
}
