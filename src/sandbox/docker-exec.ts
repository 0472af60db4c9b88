import { spawn } from 'node:child_process';
import { docker, dockerOk } from './docker-cli.ts';
import { OutputCapture } from './output-capture.ts';
import { AgentFaultError, SandboxError, type CommandResult } from './sandbox-types.ts';
import { sweepScript } from './shell-script.ts';

/**
 * Processes the Docker backend starts in a container through the engine (`docker exec`), beside
 * the supervisor rather than through it: each gets its own pipes from the engine, and its exit
 * status comes from the engine, so nothing the agent does inside can answer for it. The
 * verifier's side of an episode runs this way (docs/sandbox.md, "The verifier's ground").
 */

/**
 * Stops the supervisor (a signal from outside the container reaches its pid 1) so that nothing it
 * was handed or made to do can act any more, then kills every other process in the container and
 * confirms none is left running. Throws AgentFaultError when some outlive every pass.
 */
export async function stopEverything(name: string): Promise<void> {
  await dockerOk(['kill', '--signal', 'STOP', name], { timeoutMs: 60_000 });
  const r = await docker(['exec', name, '/bin/bash', '--noprofile', '--norc', '-c', sweepScript()], {
    timeoutMs: 120_000,
    maxBytes: 4096,
  });
  if (r.code === 3) {
    const alive = r.stdout.toString('utf8').trim().split(' ')[1] ?? '?';
    throw new AgentFaultError(`${alive} of the agent's processes outlived every kill before the verifier`);
  }
  if (r.code !== 0) throw new SandboxError(`the sweep before the verifier failed: ${r.stderr.slice(0, 400)}`);
}

/**
 * Runs `command` in a fresh bash in `workdir` (after stopEverything: nothing else runs), its
 * output kept as a command's is (head and tail within outputBytes). On a timeout the engine's
 * client is killed and every process it started in the container with it.
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
  const child = spawn(
    'docker',
    ['exec', '-w', options.workdir, name, '/bin/bash', '--noprofile', '--norc', '-c', `exec 2>&1; ${options.command}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (d: Buffer) => capture.push(d));
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err.length < 4096 ? (err += d.toString('utf8')) : undefined));
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
  // Killing the client leaves what it started running inside: the sweep ends it.
  if (timedOut || cancelled) await docker(['exec', name, '/bin/bash', '--noprofile', '--norc', '-c', sweepScript()]);
  if (cancelled) throw new SandboxError('the command was cancelled');
  // 125-127: the engine could not start it (its own failure), not the command's exit status.
  if (!timedOut && (code === null || code >= 125)) {
    throw new SandboxError(`docker exec in ${name} failed (${code ?? 'no status'}): ${err.trim().slice(0, 400)}`);
  }
  return {
    ...capture.result(),
    exitCode: timedOut ? null : code,
    timedOut,
    outputKilled: false,
    shellRestarted: false,
    durationMs: Date.now() - started,
  };
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
  if (code !== 0)
    throw new SandboxError(`${what} failed (docker exec exit ${code ?? 'none'}): ${err.trim().slice(0, 400)}`);
  if (tarCode !== 0)
    throw new SandboxError(`${what} failed (host tar exit ${tarCode ?? 'none'}): ${err.trim().slice(0, 400)}`);
}
