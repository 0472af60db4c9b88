import { chmodSync, lchownSync, readdirSync, rmSync, type Dirent } from 'node:fs';
import { join } from 'node:path';

/**
 * Host-side file handling for sandbox directories. The sandbox can leave anything in them
 * (symlinks to host paths, directories without permissions), so nothing here follows a link.
 */

/** Prefix of every sandbox's host directory under os.tmpdir() (tests count them). */
export const TEMP_PREFIX = 'crl-sandbox-';

/** lchown every entry (links themselves, never their targets). */
export function chownTree(root: string, ids: { uid: number; gid: number }): void {
  lchownSync(root, ids.uid, ids.gid);
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(root, e.name);
    if (e.isDirectory()) chownTree(p, ids);
    else lchownSync(p, ids.uid, ids.gid);
  }
}

/** Deletes a tree; directories the sandbox made unwritable or unreadable are opened up first. */
export function removeTree(root: string): void {
  try {
    rmSync(root, { recursive: true, force: true });
    return;
  } catch {
    openUp(root);
  }
  rmSync(root, { recursive: true, force: true });
}

function openUp(dir: string): void {
  try {
    chmodSync(dir, 0o700);
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) openUp(join(dir, e.name));
  } catch {
    // Not ours to open: rmSync reports what is left.
  }
}

/**
 * Roots of sandboxes (and generated task folders) still open, removed if the process exits without
 * closing them: on process.exit, which the CLI also takes on Ctrl-C / SIGTERM (cli/exit-on-interrupt.ts).
 */
const open = new Set<string>();
let hooked = false;

export function trackRoot(root: string): void {
  open.add(root);
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const r of open) {
        try {
          removeTree(r);
        } catch {
          // Best effort at exit.
        }
      }
    });
  }
}

export function untrackRoot(root: string): void {
  open.delete(root);
}
