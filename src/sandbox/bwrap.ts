import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import type { SandboxLimits } from './limits.ts';

/**
 * The bubblewrap command line for one sandbox (docs/sandbox.md). Every namespace is new (user,
 * pid, network with loopback only, ipc, uts, cgroup, mount); every capability is dropped; the root
 * is an empty tmpfs made read-only at the end; the system directories are bound read-only; only
 * the directories the caller names are bound from the host, each into its own place.
 */

/** Host system directories the sandbox sees, read-only (merged-/usr symlinks are reproduced as links). */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'] as const;

/** Fresh namespaces (user, pid, net with loopback only, ipc, uts, cgroup, mount), root inside, no capabilities. */
const NAMESPACE_ARGS = [
  '--unshare-all',
  '--unshare-user',
  '--uid',
  '0',
  '--gid',
  '0',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
];

/** Where the supervisor's execute-only bash is bound (supervised-shell.ts). */
export const SUPERVISOR_PATH = '/.crl-supervisor';

export interface SandboxMount {
  /** Host directory. */
  hostPath: string;
  /** Where it appears inside the sandbox (absolute). */
  path: string;
  writable: boolean;
}

/** Host uid the sandbox runs as: a root caller drops to nobody (65534) so no limit is exempt. */
export function sandboxHostIds(): { uid: number; gid: number } | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const uid = Number(process.env.CRL_SANDBOX_UID ?? 65534);
  return { uid, gid: uid };
}

export function bwrapArgs(options: {
  mounts: readonly SandboxMount[];
  workdir: string;
  env: Readonly<Record<string, string>>;
  limits: SandboxLimits;
  /** The program and its arguments, run as the sandbox's first process. */
  command: readonly string[];
  /** Host file bound read-only at SUPERVISOR_PATH (an execute-only bash). */
  supervisor?: string;
}): string[] {
  const { mounts, workdir, env, limits, command } = options;
  const args = [
    ...NAMESPACE_ARGS,
    '--as-pid-1', // the supervisor is init: nothing inside can kill it (kill -9 -1 spares pid 1)
    '--new-session', // no controlling terminal: TIOCSTI cannot type into the host's
    '--hostname',
    'sandbox',
  ];
  for (const dir of SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    const st = lstatSync(dir);
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  const mib = (n: number) => String(n * 1024 * 1024);
  args.push('--proc', '/proc', '--dev', '/dev');
  args.push('--size', mib(limits.tmpMb), '--tmpfs', '/dev/shm', '--size', mib(limits.tmpMb), '--tmpfs', '/tmp');
  for (const m of mounts) args.push(m.writable ? '--bind' : '--ro-bind', m.hostPath, m.path);
  if (options.supervisor) args.push('--ro-bind', options.supervisor, SUPERVISOR_PATH);
  args.push('--remount-ro', '/dev', '--remount-ro', '/');
  args.push('--chdir', workdir, '--clearenv');
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
  args.push('--', ...command);
  return args;
}

/** Why sandboxes cannot run here, or null when they can (one quick real bwrap start, cached). */
let probed: string | null | undefined;
export function sandboxUnavailableReason(): string | null {
  if (probed !== undefined) return probed;
  const ids = sandboxHostIds();
  const r = spawnSync('bwrap', [...NAMESPACE_ARGS, '--ro-bind', '/', '/', '--proc', '/proc', '--', 'true'], {
    encoding: 'utf8',
    timeout: 10_000,
    ...(ids ?? {}),
  });
  const err: NodeJS.ErrnoException | undefined = r.error;
  if (err?.code === 'ENOENT') {
    probed = 'bubblewrap (bwrap) is not installed; install it with `apt-get install -y bubblewrap` (as root)';
  } else if (err || r.status !== 0) {
    probed =
      `bwrap is installed but cannot create the sandbox's namespaces here: ${(r.stderr || err?.message || `exit ${r.status}`).trim()}. ` +
      'User namespaces may be restricted: check /proc/sys/user/max_user_namespaces, ' +
      '/proc/sys/kernel/unprivileged_userns_clone and the AppArmor setting kernel.apparmor_restrict_unprivileged_userns ' +
      '(a container may also need --security-opt seccomp=unconfined or a user-namespace-enabled runtime)';
  } else probed = null;
  return probed;
}
