import { execFile, spawnSync } from 'node:child_process';
import { SandboxError } from './sandbox-types.ts';

/**
 * The Docker engine through its own command-line client (docs/decisions/0032-docker-backend.md
 * says why the CLI and not an API client library): `docker` on PATH, the daemon named by
 * DOCKER_HOST (or the default socket), exactly as a user's own `docker` commands reach it.
 */

export interface DockerResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
}

/** Runs `docker ...args`; never throws for a failed command (the caller reads code and stderr). */
export function docker(
  args: readonly string[],
  options: { timeoutMs?: number; maxBytes?: number; signal?: AbortSignal } = {},
): Promise<DockerResult> {
  return new Promise((resolve) => {
    const child = execFile(
      'docker',
      args,
      {
        encoding: 'buffer',
        maxBuffer: options.maxBytes ?? 64 * 1024 * 1024,
        timeout: options.timeoutMs ?? 120_000,
        killSignal: 'SIGKILL',
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (error, stdout, stderr) => {
        const e = error as (NodeJS.ErrnoException & { killed?: boolean; code?: unknown; signal?: string }) | null;
        resolve({
          code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
          stdout,
          stderr: stderr.toString('utf8').trim() || (e && typeof e.code !== 'number' ? e.message : ''),
          timedOut: e?.killed === true && e.signal === 'SIGKILL',
        });
      },
    );
    child.stdin?.end();
  });
}

/** `docker ...args` that must succeed: its stdout as text, or an error naming the command. */
export async function dockerOk(args: readonly string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const r = await docker(args, options);
  if (r.code !== 0) {
    const why = r.timedOut ? `timed out after ${Math.round((options.timeoutMs ?? 120_000) / 1000)} s` : r.stderr;
    throw new DockerError(`docker ${args[0]} failed: ${why.slice(0, 800)}`);
  }
  return r.stdout.toString('utf8');
}

/** The daemon or a container failed us: a fault, not the agent's failure (docs/faults.md). */
export class DockerError extends SandboxError {
  constructor(message: string) {
    super(message);
    this.name = 'DockerError';
  }
}

let probed: string | null | undefined;
/** Why no Docker daemon answers here, or null when one does (one `docker version`, cached). */
export function dockerUnavailableReason(): string | null {
  if (probed !== undefined) return probed;
  const r = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 15_000 });
  const err: NodeJS.ErrnoException | undefined = r.error;
  if (err?.code === 'ENOENT') {
    probed = 'the docker client is not installed (Debian: `apt-get install -y docker.io`)';
  } else if (err || r.status !== 0 || !r.stdout.trim()) {
    const host = process.env.DOCKER_HOST ? `DOCKER_HOST=${process.env.DOCKER_HOST}` : 'the default socket';
    probed =
      `no Docker daemon answers at ${host}: ${(r.stderr || err?.message || `exit ${r.status}`).trim().split('\n')[0]}. ` +
      'Start one (e.g. `dockerd --storage-driver overlay2 &` as root; scripts/docker-setup.sh does it for the tests) or set DOCKER_HOST';
  } else probed = null;
  return probed;
}

/** Containers made by this tool carry these labels, so stale ones can be found and removed. */
export const SANDBOX_LABEL = 'org.compaction-rl.sandbox';
export const OWNER_LABEL = 'org.compaction-rl.owner';

const networks = new Map<string, boolean>();
/** Whether the daemon has a network of this name (cached per process). */
export function dockerNetworkExists(name: string): boolean {
  let known = networks.get(name);
  if (known === undefined) {
    known = spawnSync('docker', ['network', 'inspect', name], { timeout: 15_000 }).status === 0;
    networks.set(name, known);
  }
  return known;
}
