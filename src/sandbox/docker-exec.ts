import { spawn } from 'node:child_process';
import { docker, dockerOk } from './docker-cli.ts';
import { OutputCapture } from './output-capture.ts';
import { AgentFaultError, SandboxError, type CommandResult } from './sandbox-types.ts';
import { sweepNowScript, sweepScript } from './shell-script.ts';

/**
 * Processes the Docker backend starts in a container through the engine (`docker exec`), beside
 * the supervisor rather than through it: each gets its own pipes from the engine, and its exit
 * status comes from the engine, so nothing the agent does inside can answer for it. The
 * verifier's side of an episode runs this way (docs/sandbox.md, "The verifier's ground").
 */

/**
 * Stops the supervisor (a signal from outside the container reaches its pid 1) so that nothing it
 * was handed or made to do can act any more, then kills every other process in the container and
 * confirms none is left running, and that the supervisor is still stopped after that (a process
 * inside can wake it: sweepScript). `when` names the moment for the messages: before the
 * verifier, nothing of the agent may run; after it, nothing the verifier started (the code under
 * test included) may write the reward files once they are read. Throws AgentFaultError when
 * processes outlive every pass, when the supervisor is woken again and again, or when the
 * container's own bash is gone (it started with one: something inside removed it).
 */
export async function stopEverything(name: string, when: 'before the verifier' | 'after the verifier'): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await dockerOk(['kill', '--signal', 'STOP', name], { timeoutMs: 60_000 });
    const r = await docker(['exec', name, '/bin/bash', '--noprofile', '--norc', '-c', sweepScript()], {
      timeoutMs: 120_000,
      maxBytes: 4096,
    });
    if (r.code === 0) return;
    if (r.code === 3) {
      const alive = r.stdout.toString('utf8').trim().split(' ')[1] ?? '?';
      throw new AgentFaultError(`${alive} processes in the sandbox outlived every kill ${when}`);
    }
    if (r.code === 4) {
      if (attempt < 5) continue;
      throw new AgentFaultError(`a process in the sandbox kept waking its supervisor ${when}`);
    }
    if (await programGone(name, r.code)) {
      throw new AgentFaultError(`the sweep ${when} could not run: the sandbox's /bin/bash is gone`);
    }
    throw new SandboxError(`the sweep ${when} failed: ${r.stderr.slice(0, 400)}`);
  }
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
}): Promise<CommandResult> {
  const { name } = options;
  const started = Date.now();
  const capture = new OutputCapture(options.outputBytes, []);
  // What the command started is stopped and killed the moment it exits, before the status line.
  const script = `exec 3>&2 2>&1; ( ${options.command}\n) 3>&-; s=$?\n${sweepNowScript()}printf '\\n${STATUS}%d\\n' "$s" >&3`;
  const child = spawn(
    'docker',
    ['exec', '-w', options.workdir, name, '/bin/bash', '--noprofile', '--norc', '-c', script],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout.on('data', (d: Buffer) => capture.push(d));
  // The tail: the status line comes last.
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-4096)));
  let timedOut = false;
  let cancelled = false;
  const stop = (): void => void child.kill('SIGKILL');
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, options.timeoutMs);
  const onAbort = (): void => {
    cancelled = true;
    stop();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const code = await new Promise<number | null>((resolve) => {
    child.on('error', () => resolve(null));
    child.on('close', (c) => resolve(c));
  });
  clearTimeout(timer);
  options.signal?.removeEventListener('abort', onAbort);
  if (cancelled) {
    // Killing the client leaves what it started running inside: the sweep ends it.
    await docker(['exec', name, '/bin/bash', '--noprofile', '--norc', '-c', sweepScript()]);
    throw new SandboxError('the command was cancelled');
  }
  const status = new RegExp(`\n${STATUS}(\\d+)\n`).exec(err);
  // Without the status line, 1 to 125 is the engine's own failure (or its client's); 0 (the line
  // spoiled from inside) or 126 and above (bash killed or gone) in a running container is the sandbox's.
  const inside = code === 0 || ((code ?? 0) >= 126 && (await running(name)));
  if (!timedOut && status === null && !inside) {
    throw new SandboxError(`docker exec in ${name} failed (${code ?? 'no status'}): ${err.trim().slice(0, 400)}`);
  }
  return {
    ...capture.result(),
    exitCode: timedOut || status === null ? null : Number(status[1]),
    timedOut,
    outputKilled: false,
    shellRestarted: false,
    durationMs: Date.now() - started,
  };
}

/** Whether the daemon says the container is running (false when it is gone or the daemon does not answer). */
async function running(name: string): Promise<boolean> {
  const r = await docker(['container', 'inspect', '--format', '{{.State.Running}}', name], { timeoutMs: 60_000 });
  return r.code === 0 && r.stdout.toString('utf8').trim() === 'true';
}

/**
 * Replaces the container directory `to` with a copy of the host tree `from` (empty when null),
 * leaving out `skip`: one `docker exec` that removes what is there (a link the agent left is
 * removed, never followed; so is a link or a file the agent put in place of a directory above
 * it), then unpacks a tar stream of the tree made on the host (links kept as links), owned by
 * root as Harbor's files are. When what is there cannot be removed (only the agent's processes
 * could have put it there), AgentFaultError.
 */
export async function copyTree(name: string, from: string | null, to: string, skip: readonly string[]): Promise<void> {
  const script = [
    'to=$1; d=; set -f; IFS=/',
    'for part in ${to#/}; do d="$d/$part"; if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then rm -f -- "$d" || exit 3; fi; done',
    'unset IFS; rm -rf -- "$to" && mkdir -p -- "$to" || exit 3',
    '[ "$2" = tar ] || exit 0',
    'tar -x --no-same-owner --no-same-permissions -C "$to" || exit 4',
  ].join('\n');
  const args = ['exec', '-i', name, '/bin/bash', '--noprofile', '--norc', '-c', script, 'crl-copy', to];
  const exec = spawn('docker', [...args, from === null ? 'empty' : 'tar'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let err = '';
  exec.stderr.on('data', (d: Buffer) => (err.length < 4096 ? (err += d.toString('utf8')) : undefined));
  const done = new Promise<number | null>((resolve) => {
    exec.on('error', () => resolve(null));
    exec.on('close', (code) => resolve(code));
  });
  // The host's tar must succeed too: a tree it could not read in full unpacks as a partial copy.
  let packed: Promise<number | null> = Promise.resolve(0);
  if (from === null) exec.stdin.end();
  else {
    const tar = spawn('tar', ['-c', '-C', from, ...skip.flatMap((k) => ['--exclude', `./${k}`]), '.'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    tar.stderr.on('data', (d: Buffer) => (err.length < 4096 ? (err += d.toString('utf8')) : undefined));
    tar.stdout.pipe(exec.stdin);
    exec.stdin.on('error', () => undefined);
    packed = new Promise((resolve) => {
      tar.on('error', () => resolve(null));
      tar.on('close', (c) => resolve(c));
    });
  }
  const timer = setTimeout(() => exec.kill('SIGKILL'), 300_000);
  const [code, tarCode] = await Promise.all([done, packed]);
  clearTimeout(timer);
  const what = `copying ${from ?? 'nothing'} to ${to} in the container`;
  if (code === 3) throw new AgentFaultError(`${what}: the agent's files are in the way: ${err.trim().slice(0, 300)}`);
  if (await programGone(name, code)) throw new AgentFaultError(`${what}: the sandbox's /bin/bash is gone`);
  if (code !== 0)
    throw new SandboxError(`${what} failed (docker exec exit ${code ?? 'none'}): ${err.trim().slice(0, 400)}`);
  if (tarCode !== 0)
    throw new SandboxError(`${what} failed (host tar exit ${tarCode ?? 'none'}): ${err.trim().slice(0, 400)}`);
}
