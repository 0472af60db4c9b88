import {
  closeSync,
  constants,
  cpSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
} from 'node:fs';
import { join, posix } from 'node:path';
import type { SandboxBackend, SandboxSession, SandboxSpec } from './backend.ts';
import { sandboxHostIds, sandboxUnavailableReason } from './bwrap.ts';
import { Sandbox } from './supervised-shell.ts';
import { chownTree, removeTree } from './host-files.ts';
import { AgentFaultError } from './sandbox-types.ts';
import { treeBytes, withStorageCap } from './storage-cap.ts';

/**
 * The bubblewrap backend (docs/sandbox.md): each session is a Sandbox (supervised-shell.ts) whose
 * directories are host directories bound into fresh namespaces, so copying in and reading out
 * are host-side file operations that never follow a link the sandbox made.
 */
export function bwrapBackend(options: { tempRoot?: string } = {}): SandboxBackend {
  return {
    name: 'bwrap',
    unavailableReason: sandboxUnavailableReason,
    async start(spec: SandboxSpec): Promise<SandboxSession> {
      const sandbox = await Sandbox.start({
        dirs: spec.dirs,
        workdir: spec.workdir,
        ...(spec.limits ? { limits: spec.limits } : {}),
        ...(spec.env ? { env: spec.env } : {}),
        ...(options.tempRoot ? { tempRoot: options.tempRoot } : {}),
        prepare: (hostDir) => {
          const host = (path: string) => hostPathBelow(spec, hostDir, path);
          for (const s of spec.seed ?? []) {
            cpSync(s.from, host(s.to), {
              recursive: true,
              verbatimSymlinks: true,
              filter: (src) => !(s.skip ?? []).some((k) => src === join(s.from, k)),
            });
          }
          for (const d of spec.emptyDirs ?? []) mkdirSync(host(d), { recursive: true });
        },
      });
      const session = sessionOf(spec, sandbox);
      const capMb = spec.limits?.storageMb;
      // Plain host directories: the cap is measured (storage-cap.ts); /tmp and /dev/shm are tmpfs of tmpMb each.
      return capMb === undefined || sandbox.root === null
        ? session
        : withStorageCap({
            session,
            capMb,
            measure: async () => treeBytes(sandbox.root!),
            freeze: () => sandbox.close(),
          });
    },
  };
}

function sessionOf(spec: SandboxSpec, sandbox: Sandbox): SandboxSession {
  const host = (path: string) => hostPathBelow(spec, (p) => sandbox.hostPath(p), path);
  return {
    run: (command, o) => sandbox.run(command, o),
    runFresh: (command, o) => sandbox.runFresh(command, o),
    clearAgent: () => sandbox.clearAgent(),
    async copyIn({ from, to }) {
      const target = host(to);
      try {
        assertNoLinkBelow(spec, sandbox, to);
      } catch (e) {
        throw new AgentFaultError(`the agent's files are in the way: ${(e as Error).message}`);
      }
      // A mount's own directory stays (bwrap bound that inode): only what is in it goes.
      if (spec.dirs.some((d) => d.path === posix.normalize(to)))
        for (const e of readdirSync(target)) removeTree(join(target, e));
      else {
        removeTree(target);
        mkdirSync(target);
      }
      if (from !== null) cpSync(from, target, { recursive: true, verbatimSymlinks: true });
      const ids = sandboxHostIds();
      if (ids) chownTree(target, ids);
    },
    async readFile(path, { maxBytes }) {
      try {
        assertNoLinkBelow(spec, sandbox, posix.dirname(path));
      } catch {
        return null;
      }
      return readRegularFile(host(path), maxBytes);
    },
    close: () => sandbox.close(),
  };
}

/** The host path of `path`: one of the spec's dirs, or below one. */
function hostPathBelow(spec: SandboxSpec, hostDir: (dir: string) => string, path: string): string {
  const norm = posix.normalize(path);
  const dir = spec.dirs.find((d) => norm === d.path || norm.startsWith(`${d.path}/`));
  if (!dir) throw new Error(`internal: ${path} is not inside one of the sandbox's directories`);
  return join(hostDir(dir.path), norm.slice(dir.path.length));
}

/** Throws when a directory between the mount and `path` is not a real directory (a link the agent made). */
function assertNoLinkBelow(spec: SandboxSpec, sandbox: Sandbox, path: string): void {
  const norm = posix.normalize(path);
  const dir = spec.dirs.find((d) => norm === d.path || norm.startsWith(`${d.path}/`))!;
  let at = sandbox.hostPath(dir.path);
  for (const part of norm.slice(dir.path.length).split('/').filter(Boolean)) {
    at = join(at, part);
    let st;
    try {
      st = lstatSync(at);
    } catch {
      return; // absent: nothing below it can be a link
    }
    if (!st.isDirectory()) throw new Error(`${path}: ${posix.join(dir.path, part)} is not a directory`);
  }
}

/** The file's bytes, or null when absent, not a regular file (a link included) or over maxBytes. */
function readRegularFile(path: string, maxBytes: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > maxBytes) return null;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, st.size, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}
