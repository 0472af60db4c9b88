import { spawn } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import { z } from 'zod';
import { engine, engineOk } from './docker/engine-api.ts';
import { engineExec, type ExecResult } from './docker/engine-exec.ts';
import { heldFailure, PLACE_FUNCTION, type HeldPart } from './docker/held-work.ts';
import { OutputCapture } from './output-capture.ts';
import { AgentFaultError, SandboxError, type CommandResult } from './sandbox-types.ts';
import { bashQuote, groundScript, sweepNowScript, sweepScript } from './shell-script.ts';
import { LISTDIR_FUNCTION, parseListing, type Listing } from './docker/dir-listing.ts';

/**
 * Processes the Docker backend starts in a container through the engine (an exec over its API), beside
 * the supervisor rather than through it: each gets its own pipes from the engine, and its exit
 * status comes from the engine, so nothing the agent does inside can answer for it. The
 * verifier's side of an episode runs this way (docs/sandbox.md, "The verifier's ground").
 */

/** SIGSTOP to the container's first process, from outside its namespace (the engine's kill). */
export async function stopSupervisor(name: string): Promise<void> {
  await engineOk({
    method: 'POST',
    path: `/containers/${encodeURIComponent(name)}/kill`,
    query: { signal: 'STOP' },
    timeoutMs: 60_000,
  });
}

/**
 * Whether a failed `docker exec` (status `code`) failed because the program it ran could not be
 * started in a container that is still running (126: not executable, 127: not found): the
 * container's own files changed, which only something inside it could do. A container that is
 * not running, or a daemon that does not say, is not that (SandboxError: false).
 */
export async function programGone(name: string, code: number | null): Promise<boolean> {
  return (code === 126 || code === 127) && running(name);
}

/** How the verifier's shell reports its command's status: on the engine's stderr, out of the command's reach. */
const STATUS = '__CRL_STATUS_';

/**
 * Runs `command` in a subshell of a fresh bash in `workdir` (after stopEverything: nothing else runs), its
 * output kept as a command's is (head and tail within outputBytes). On a timeout the engine's
 * client is killed; what it started inside is left to the caller's sweep (stopEverything).
 *
 * The command's exit status comes from a line its bash prints last on a descriptor the command
 * does not inherit, so `docker exec`'s own status says only whether the engine ran it. A bash
 * that died without that line (killed from inside by `kill -9 -1`, or its /bin/bash removed)
 * in a container that still runs is the sandbox's doing: the result has no exit code, as a
 * crashed command's. Only an engine that could not run it (container gone, daemon not
 * answering) is a SandboxError.
 */
export async function execFresh(options: {
  name: string;
  command: string;
  workdir: string;
  timeoutMs: number;
  outputBytes: number;
  signal?: AbortSignal | undefined;
  /** Work run first in the same process (docker/held-work.ts); the command itself reads /dev/null. */
  before?: HeldPart | null;
  /** Once the command ended and was swept: the engine's sweep, then these directories read (AfterRead). */
  after?: { dirs: readonly string[]; maxBytes: number } | null;
}): Promise<CommandResult & { after?: AfterRead }> {
  const { name, after } = options;
  const started = Date.now();
  const capture = new OutputCapture(options.outputBytes, []);
  // What the command started is stopped and killed the moment it exits, before the status line.
  const tail = after
    ? `${groundScript()}ground; g=$?\nprintf '${AFTER}%d\\n' "$g" >&3\n[ "$g" = 0 ] || exit 0\n${LISTDIR_FUNCTION}` +
      `{ ${after.dirs.map((d) => `listdir ${bashQuote(d)} ${after.maxBytes};`).join(' ')} } >&3\n`
    : '';
  const script = `${options.before?.script ?? ''}exec 3>&2 2>&1; ( ${options.command}\n) 3>&- </dev/null; s=$?\n${sweepNowScript()}printf '\\n${STATUS}%d\\n' "$s" >&3\n${tail}`;
  // The status line and what follows it come last; what came before is kept to its last 4096 bytes.
  const err = new TailBuffer(after ? 8 * 1024 * 1024 : 4096);
  const r = await engineExec({
    container: name,
    cmd: ['/bin/bash', '--noprofile', '--norc', '-c', script],
    workdir: options.workdir,
    stdin: options.before?.stdin,
    onStdout: (d) => capture.push(d),
    onStderr: (d) => err.push(d),
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  if (r.cancelled) {
    // Cutting the stream leaves what it started running inside: the sweep ends it.
    await engineExec({
      container: name,
      cmd: ['/bin/bash', '--noprofile', '--norc', '-c', sweepScript()],
      timeoutMs: 120_000,
    }).catch(() => undefined);
    throw new SandboxError('the command was cancelled');
  }
  const bytes = err.bytes();
  const at = bytes.lastIndexOf(`\n${STATUS}`);
  const status =
    at < 0 ? null : new RegExp(`^\n${STATUS}(\\d+)\n`).exec(bytes.subarray(at, at + 40).toString('latin1'));
  const text = bytes
    .subarray(Math.max(0, (at < 0 ? bytes.length : at) - 4096), at < 0 ? bytes.length : at)
    .toString('utf8');
  if (!r.timedOut && status === null) {
    if (options.before) heldFailure(r.code, text, options.before.when);
    // Without the status line, 0 (the line spoiled from inside) or 126 and above (bash killed or
    // gone) in a running container is the sandbox's doing; anything else is the engine's.
    const inside = r.code === 0 || ((r.code ?? 0) >= 126 && (await running(name)));
    if (!inside)
      throw new SandboxError(`docker exec in ${name} failed (${r.code ?? 'no status'}): ${describeExec(r, text)}`);
  }
  const result = {
    ...capture.result(),
    exitCode: r.timedOut || status === null ? null : Number(status[1]),
    timedOut: r.timedOut,
    outputKilled: false,
    shellRestarted: false,
    durationMs: Date.now() - started,
  };
  if (!after || status === null || r.timedOut || err.truncated) return result;
  return { ...result, after: afterRead(bytes.subarray(at + status[0].length)) };
}

/**
 * What the verifier's exec says after its command: the status of the engine's sweep (as
 * groundScript's: 0, 3 processes outlived it, 4 the supervisor woken; null when it did not say),
 * and with 0 the directories read (dir-listing.ts).
 */
export interface AfterRead {
  ground: number | null;
  listing: Listing | null;
}

function afterRead(rest: Buffer): AfterRead {
  const m = new RegExp(`^${AFTER}(\\d+)\n`).exec(rest.subarray(0, 40).toString('latin1'));
  if (m === null) return { ground: null, listing: null };
  const ground = Number(m[1]);
  return { ground, listing: ground === 0 ? parseListing(rest.subarray(m[0].length)) : null };
}

/** How the verifier's shell reports the sweep after its command. */
const AFTER = '__CRL_AFTER_';

/** The last `max` bytes pushed (or the first `max`, `truncated` set, when more came). */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly max: number) {}
  push(d: Buffer): void {
    this.chunks.push(d);
    this.size += d.length;
    while (this.size > this.max && this.chunks.length > 1) {
      this.truncated = true;
      this.size -= this.chunks.shift()!.length;
    }
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Whether the daemon says the container is running (false when it is gone or the daemon does not answer). */
async function running(name: string): Promise<boolean> {
  const r = await engine({
    method: 'GET',
    path: `/containers/${encodeURIComponent(name)}/json`,
    timeoutMs: 60_000,
  }).catch(() => null);
  if (r === null || r.status !== 200) return false;
  const s = z.object({ State: z.object({ Running: z.boolean() }) }).safeParse(JSON.parse(r.body.toString('utf8')));
  return s.success && s.data.State.Running;
}

/** A failed exec in a few words: the engine's own message, the process's stderr, or its status. */
export function describeExec(r: ExecResult, stderr = ''): string {
  if (r.timedOut) return 'the engine timed out';
  return (r.system.trim() || stderr.trim() || `exit ${r.code ?? 'none'}`).slice(0, 400);
}

/**
 * Replaces the container directory `to` with a copy of the host tree `from` (empty when null),
 * leaving out `skip`: one exec that removes what is there (a link the agent left is removed,
 * never followed; so is a link or a file the agent put in place of a directory above it), then
 * unpacks a tar stream of the tree made on the host (links kept as links), owned by root as
 * Harbor's files are. When what is there cannot be removed (only the agent's processes could
 * have put it there), AgentFaultError.
 */
export async function copyTree(options: {
  name: string;
  from: string | null;
  to: string;
  skip: readonly string[];
}): Promise<void> {
  const { name, from, to } = options;
  const script = `${PLACE_FUNCTION}place "$1" || exit 3\n[ "$2" = tar ] || exit 0\ntar -x --no-same-owner --no-same-permissions -C "$1" || exit 4`;
  const cmd = ['/bin/bash', '--noprofile', '--norc', '-c', script, 'crl-copy', to, from === null ? 'empty' : 'tar'];
  let err = '';
  const keep = (d: Buffer): void => void (err.length < 4096 ? (err += d.toString('utf8')) : undefined);
  // The host's tar must succeed too: a tree it could not read in full unpacks as a partial copy.
  let packed: Promise<number | null> = Promise.resolve(0);
  let stdin: Readable | undefined;
  if (from !== null) {
    const tar = spawn('tar', ['-c', '-C', from, ...options.skip.flatMap((k) => ['--exclude', `./${k}`]), '.'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    tar.stderr.on('data', keep);
    // Read from now on: node drops a child's output that has no reader when the child exits.
    stdin = tar.stdout.pipe(new PassThrough());
    packed = new Promise((resolve) => {
      tar.on('error', () => resolve(null));
      tar.on('close', (c) => resolve(c));
    });
  }
  const [r, tarCode] = await Promise.all([
    engineExec({ container: name, cmd, stdin, onStderr: keep, timeoutMs: 300_000 }),
    packed,
  ]);
  const what = `copying ${from ?? 'nothing'} to ${to} in the container`;
  if (r.code === 3) throw new AgentFaultError(`${what}: the agent's files are in the way: ${err.trim().slice(0, 300)}`);
  if (await programGone(name, r.code)) throw new AgentFaultError(`${what}: the sandbox's /bin/bash is gone`);
  if (r.code !== 0) throw new SandboxError(`${what} failed (exec exit ${r.code ?? 'none'}): ${describeExec(r, err)}`);
  if (tarCode !== 0)
    throw new SandboxError(`${what} failed (host tar exit ${tarCode ?? 'none'}): ${err.trim().slice(0, 400)}`);
}
