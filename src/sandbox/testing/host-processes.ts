import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Host-side views of processes, for tests that check what a sandbox leaves running. A process
 * belongs to a sandbox when it is in the pid namespace of the sandbox's first process (bwrap's
 * child, whose parent is the bwrap process node spawned).
 */

function pids(): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

function safe<T>(f: () => T): T | null {
  try {
    return f();
  } catch {
    return null;
  }
}

export function parentOf(pid: number): number | null {
  const stat = safe(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
  if (stat === null) return null;
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The pid namespace of bwrap's child, or null once it is gone. */
export function sandboxPidNamespace(bwrapPid: number): string | null {
  const child = pids().find((p) => parentOf(p) === bwrapPid);
  return child === undefined ? null : safe(() => readlinkSync(`/proc/${child}/ns/pid`));
}

/** Host pids of the processes in that pid namespace. */
export function processesInNamespace(ns: string): number[] {
  return pids().filter((p) => safe(() => readlinkSync(`/proc/${p}/ns/pid`)) === ns);
}

/** Host pids whose command line contains `marker`. */
export function processesWithArg(marker: string): number[] {
  return pids().filter((p) => (safe(() => readFileSync(`/proc/${p}/cmdline`, 'utf8')) ?? '').includes(marker));
}

/** This process's children (e.g. bwrap processes still attached). */
export function childrenOf(pid: number): number[] {
  return pids().filter((p) => parentOf(p) === pid);
}

export function openFdCount(): number {
  return readdirSync('/proc/self/fd').length;
}
