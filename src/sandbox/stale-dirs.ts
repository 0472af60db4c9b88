import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeTree, TEMP_PREFIX } from './host-files.ts';

/**
 * Sandbox host directories of processes that died without closing them (kill -9, a crash). Each
 * directory's name carries its owner: `crl-sandbox-<pid>.<start>-XXXXXX`, where start is the
 * process's start time in clock ticks since boot (/proc/PID/stat, field 22), so a reused pid is
 * not mistaken for the owner. A directory whose owner is gone is removed when the next sandbox
 * starts under the same root.
 */

/** This process's tag, `<pid>.<start>` (start 0 where /proc is not readable). */
export function ownerTag(pid: number = process.pid): string {
  return `${pid}.${processStart(pid) ?? 0}`;
}

/** Prefix of a new sandbox directory made by this process (mkdtemp adds six characters). */
export function ownedPrefix(): string {
  return `${TEMP_PREFIX}${ownerTag()}-`;
}

const OWNED = new RegExp(`^${TEMP_PREFIX}(\\d+)\\.(\\d+)-.{6}$`);

/** Removes directories under root whose owner process no longer runs; returns their names. */
export function removeStaleDirs(root: string): string[] {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = OWNED.exec(name);
    if (!m) continue; // not ours, or made before owners were named: left alone
    const pid = Number(m[1]);
    if (pid === process.pid || alive(pid, Number(m[2]))) continue;
    try {
      removeTree(join(root, name));
      removed.push(name);
    } catch {
      // Another process may be removing it at the same time; whatever is left goes next time.
    }
  }
  return removed;
}

/** Whether the process an ownerTag() names still runs (a reused pid with another start time does not count). */
export function ownerAlive(tag: string): boolean {
  const m = /^(\d+)\.(\d+)$/.exec(tag);
  if (!m) return true; // not a tag of ours: never treated as stale
  const pid = Number(m[1]);
  return pid === process.pid || alive(pid, Number(m[2]));
}

function alive(pid: number, start: number): boolean {
  const now = processStart(pid);
  if (now === null) {
    try {
      process.kill(pid, 0);
      return true; // exists, but /proc is not readable: assume it is the owner
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return start === 0 || now === start;
}

/** Field 22 of /proc/PID/stat (start time), or null when unreadable. */
function processStart(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]); // fields after "pid (comm)" start at field 3
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}
