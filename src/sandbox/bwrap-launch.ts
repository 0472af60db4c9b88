import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bwrapArgs, sandboxHostIds, sandboxUnavailableReason, SUPERVISOR_PATH, type SandboxMount } from './bwrap.ts';
import { chownTree, removeTree, trackRoot, untrackRoot } from './host-files.ts';
import { SandboxLimitsSchema, type SandboxLimits } from './limits.ts';
import { SandboxUnavailableError, type SandboxOptions } from './sandbox-types.ts';
import type { SandboxLaunch } from './shell-pipes.ts';
import { ownedPrefix, removeStaleDirs } from './stale-dirs.ts';
import { supervisorScript } from './shell-script.ts';

/**
 * The host side of a bwrap sandbox, made before its first process starts (Sandbox.start): a
 * directory of its own under the temporary root with one host directory per sandbox directory,
 * filled by the caller's `prepare`, the supervisor's execute-only bash, and the bwrap command line.
 */
export interface BwrapLaunch {
  /** The sandbox's host directory; tracked (host-files.ts) until whoever closes the sandbox removes it. */
  root: string;
  mounts: SandboxMount[];
  limits: SandboxLimits;
  launch: SandboxLaunch;
  /** Session nonce the supervisor prints in its READY line and shell-exit marker. */
  nonce: string;
}

/** Roots swept for dead processes' directories (stale-dirs.ts), once per process. */
const swept = new Set<string>();
function sweepOnce(root: string): void {
  if (swept.has(root)) return;
  swept.add(root);
  removeStaleDirs(root);
}

/** Host path of a sandbox directory. */
export function hostPathOf(mounts: readonly SandboxMount[], path: string): string {
  const m = mounts.find((x) => x.path === path);
  if (!m) throw new Error(`internal: ${path} is not one of the sandbox's directories`);
  return m.hostPath;
}

/** Makes a sandbox's host side; nothing of it is left when this throws. */
export async function prepareBwrapLaunch(options: SandboxOptions): Promise<BwrapLaunch> {
  const unavailable = sandboxUnavailableReason();
  if (unavailable) throw new SandboxUnavailableError(unavailable);
  const limits = SandboxLimitsSchema.parse(options.limits ?? {});
  if (!options.dirs.some((d) => d.path === options.workdir && d.writable)) {
    throw new Error(`the sandbox's workdir ${options.workdir} must be one of its writable dirs`);
  }
  const tempRoot = options.tempRoot ?? tmpdir();
  sweepOnce(tempRoot);
  const root = mkdtempSync(join(tempRoot, ownedPrefix()));
  trackRoot(root);
  try {
    const mounts = options.dirs.map((d, i) => {
      const hostPath = join(root, `${i}${d.path.replace(/[^A-Za-z0-9]+/g, '-')}`);
      mkdirSync(hostPath);
      return { hostPath, path: d.path, writable: d.writable };
    });
    await options.prepare?.((path) => hostPathOf(mounts, path));
    const ids = sandboxHostIds() ?? undefined;
    if (ids) chownTree(root, ids);
    const home = options.dirs.some((d) => d.path === '/root' && d.writable) ? '/root' : options.workdir;
    const env = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: home,
      USER: 'root',
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      ...options.env,
    };
    const script = supervisorScript({ limits, workdir: options.workdir });
    const nonce = randomBytes(8).toString('hex');
    // The supervisor runs from an execute-only copy of bash: the kernel then makes it undumpable, so
    // the agent (same uid, no capabilities) can neither open its /proc/1/fd nor ptrace it.
    const supervisor = join(root, 'supervisor');
    copyFileSync(realpathSync('/bin/bash'), supervisor);
    chmodSync(supervisor, 0o111);
    const command = [SUPERVISOR_PATH, '--noprofile', '--norc', '-c', script, 'crl-sandbox', nonce];
    const args = bwrapArgs({ mounts, workdir: options.workdir, env, limits, command, supervisor });
    return { root, mounts, limits, launch: { command: 'bwrap', args, ids }, nonce };
  } catch (e) {
    untrackRoot(root);
    removeTree(root);
    throw e;
  }
}
