import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { SandboxBackend, SandboxSession, SandboxSpec } from './backend.ts';
import { Sandbox } from './supervised-shell.ts';
import {
  docker,
  dockerOk,
  dockerUnavailableReason,
  OWNER_LABEL,
  SANDBOX_LABEL,
  type DockerResult,
} from './docker-cli.ts';
import { runLabelArgs } from './docker-run-scope.ts';
import { SandboxLimitsSchema } from './limits.ts';
import { copyTree, execFresh, programGone, stopEverything } from './docker-exec.ts';
import { withStorageCap } from './storage-cap.ts';
import { SandboxError, SandboxUnavailableError } from './sandbox-types.ts';
import { bashQuote } from './shell-script.ts';
import { ownerAlive, ownerTag } from './stale-dirs.ts';

/**
 * The Docker backend (docs/sandbox.md, docs/decisions/0032-docker-backend.md): one container per
 * sandbox, from the image the spec names. Its first process is the same supervisor bwrap runs
 * (shell-script.ts, muxed over `docker run -i`'s stdin and stderr), so commands, timeouts, the
 * verifier's fresh shell and the process sweep behave as they do there. Memory, processes and
 * CPUs are the daemon's cgroup limits. Nothing of the host is mounted: files go in and out with
 * `docker cp` and `docker exec`. The container is started with --rm and ends when its stdin
 * closes, so a killed `crl` leaves nothing running; stopped leftovers of dead owners are removed
 * at the next start (labels name the owner process).
 */
export function dockerBackend(): SandboxBackend {
  return {
    name: 'docker',
    unavailableReason: dockerUnavailableReason,
    async start(spec: SandboxSpec): Promise<SandboxSession> {
      const unavailable = dockerUnavailableReason();
      if (unavailable) throw new SandboxUnavailableError(unavailable);
      if (!spec.image)
        throw new SandboxError('the docker sandbox needs an image (a task without a Dockerfile runs on bwrap)');
      await sweepOnce();
      const limits = SandboxLimitsSchema.parse(spec.limits ?? {});
      const name = `crl-sandbox-${process.pid}-${randomBytes(5).toString('hex')}`;
      const env = { LANG: 'C.UTF-8', TERM: 'dumb', ...spec.env };
      const args = [
        'run',
        '-i',
        '--rm',
        '--name',
        name,
        '--label',
        `${SANDBOX_LABEL}=1`,
        '--label',
        `${OWNER_LABEL}=${OWNER}`,
        ...runLabelArgs(),
        '--network',
        spec.network ?? 'none',
        '--memory',
        `${limits.memoryMb}m`,
        '--memory-swap',
        `${limits.memoryMb}m`,
        '--pids-limit',
        String(limits.processes),
        ...(spec.cpus ? ['--cpus', String(spec.cpus)] : []),
        '--security-opt',
        'no-new-privileges',
        '--hostname',
        'sandbox',
        '--workdir',
        spec.workdir,
        ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
        '--entrypoint',
        '/bin/bash',
        spec.image,
      ];
      const sandbox = await Sandbox.connect({
        limits,
        workdir: spec.workdir,
        // The first start of an image also unpacks its layers: more time than bwrap needs.
        startTimeoutMs: 120_000,
        launch: (script, nonce) => ({
          command: 'docker',
          args: [...args, '--noprofile', '--norc', '-c', script, 'crl-sandbox', nonce],
          muxed: true,
        }),
      });
      const plain = sessionOf({ name, sandbox, workdir: spec.workdir, outputBytes: limits.outputBytes });
      // overlay2 caps a container's writable layer only on xfs with project quotas: measured instead.
      const session =
        limits.storageMb === undefined
          ? plain
          : withStorageCap({
              session: plain,
              capMb: limits.storageMb,
              measure: () => writableLayerBytes(name),
              freeze: async () => void (await docker(['pause', name], { timeoutMs: 60_000 })),
            });
      try {
        const made = [spec.workdir, ...spec.dirs.map((d) => d.path), ...(spec.emptyDirs ?? [])];
        await exec(name, `mkdir -p -- ${made.map(bashQuote).join(' ')}`);
        for (const s of spec.seed ?? []) await copyTree(name, s.from, s.to, s.skip ?? []);
        return session;
      } catch (e) {
        await session.close();
        throw e;
      }
    },
  };
}

const OWNER = `${hostname()}/${ownerTag()}`;

function sessionOf(options: { name: string; sandbox: Sandbox; workdir: string; outputBytes: number }): SandboxSession {
  const { name, sandbox } = options;
  let closed = false;
  let cleared: Promise<void> | null = null;
  // The agent's turn is over: the supervisor sweeps (its reply checked), then the engine stops it
  // and sweeps again, so neither a forged reply nor bytes the agent left in the supervisor's
  // input can keep anything of the agent alive, or start anything, once the verifier's files go in.
  const clearAgent = (): Promise<void> =>
    (cleared ??= (async () => {
      await sandbox.clearAgent();
      await stopEverything(name, 'before the verifier');
    })());
  return {
    run: (command, o) => sandbox.run(command, o),
    clearAgent,
    async runFresh(command, o) {
      if (o.keepAgent) return sandbox.runFresh(command, o);
      await clearAgent();
      const r = await execFresh({ name, command, workdir: options.workdir, outputBytes: options.outputBytes, ...o });
      // What the verifier started (the code under test included) ends with it: its files are read next.
      await stopEverything(name, 'after the verifier');
      return r;
    },
    copyIn: ({ from, to }) => copyTree(name, from, to, []),
    async readFile(path, { maxBytes }) {
      // Inside the container: no part of the path may be a link, the file must be regular and small enough.
      const script =
        'p=$1; max=$2; d=; IFS=/; set -f; for part in ${p#/}; do d="$d/$part"; [ -L "$d" ] && exit 3; done; ' +
        '[ -f "$p" ] || exit 3; s=$(stat -c %s -- "$p") || exit 3; [ "$s" -le "$max" ] || exit 3; exec cat -- "$p"';
      const r = await docker(['exec', name, '/bin/bash', '-c', script, 'crl-read', path, String(maxBytes)], {
        maxBytes: maxBytes + 1,
      });
      if (r.code === 0) return r.stdout;
      if (r.code === 3) return null; // the script's own answer: not there, or not a file it may read
      // Its bash or cat removed from inside a running container: the file cannot be read, by the sandbox's doing.
      if (await programGone(name, r.code)) return null;
      // Anything else is docker exec failing (container gone, daemon down), not an absent file.
      throw new SandboxError(`reading ${path} in the container failed: ${describeFailure(r)}`);
    },
    async close() {
      if (closed) return;
      closed = true;
      const r = await docker(['rm', '-f', name], { timeoutMs: 60_000 });
      await sandbox.close();
      // Started with --rm, the container may already be gone, or going (its own end started the
      // removal): only a container left running is a failure. One whose removal is under way is
      // waited for, so that close() returns with the container gone (on a busy daemon the removal
      // outlasted close() and a caller's check found it still listed).
      if (r.code !== 0 && /removal of container .* is already in progress/i.test(r.stderr)) await untilGone(name);
      else if (r.code !== 0 && !/no such container/i.test(r.stderr))
        throw new SandboxError(`removing container ${name} failed: ${describeFailure(r)}`);
    },
  };
}

/** Waits (up to 60 s) until the daemon no longer lists the container; a SandboxError after that. */
async function untilGone(name: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await docker(['ps', '-a', '-q', '--filter', `name=^${name}$`], { timeoutMs: 30_000 });
    if (r.code === 0 && r.stdout.toString('utf8').trim() === '') return;
    if (Date.now() > deadline)
      throw new SandboxError(`container ${name} was still being removed 60 s after it was asked to go`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs a helper command as root inside the container (not in the agent's shell). */
async function exec(name: string, command: string): Promise<void> {
  await dockerOk(['exec', name, '/bin/bash', '-c', command], { timeoutMs: 60_000 });
}

/** A failed docker command in a few words: its stderr, or that it timed out, or its exit status. */
function describeFailure(r: DockerResult): string {
  if (r.timedOut) return 'docker timed out';
  return (r.stderr || `docker exit ${r.code ?? 'none'}`).slice(0, 400);
}

/** The size of the container's writable layer (what it wrote), or null when the daemon does not say. */
async function writableLayerBytes(name: string): Promise<number | null> {
  const r = await docker(['container', 'inspect', '--size', '--format', '{{.SizeRw}}', name], { timeoutMs: 60_000 });
  const n = Number(r.stdout.toString('utf8').trim());
  return r.code === 0 && Number.isFinite(n) ? n : null;
}

let swept: Promise<string[]> | null = null;
/** The sweep below, once per process (before its first sandbox). */
function sweepOnce(): Promise<string[]> {
  swept ??= sweepStaleContainers();
  return swept;
}

/** Removes containers of this host's dead owner processes (a killed `crl`); returns their ids. */
export async function sweepStaleContainers(): Promise<string[]> {
  const r = await docker([
    'ps',
    '-a',
    '--filter',
    `label=${SANDBOX_LABEL}`,
    '--format',
    `{{.ID}} {{.Label "${OWNER_LABEL}"}}`,
  ]);
  if (r.code !== 0) return [];
  const stale = r.stdout
    .toString('utf8')
    .split('\n')
    .map((l) => l.trim().split(' '))
    .filter(([id, owner]) => {
      if (!id || !owner) return false;
      const [host, tag] = owner.split('/');
      return host === hostname() && tag !== undefined && !ownerAlive(tag);
    })
    .map(([id]) => id!);
  if (stale.length > 0) await docker(['rm', '-f', ...stale], { timeoutMs: 120_000 });
  return stale;
}
