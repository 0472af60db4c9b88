import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Crash-safe file writes: the one implementation every writer in src/ uses. A kill -9 or a power
 * cut can land anywhere, so every file that a resume or a reader trusts is either complete or
 * absent: write a temp file in the same directory (a rename is only atomic within one filesystem),
 * fsync it, rename it over the target (atomic on POSIX), then fsync the directory so the rename
 * itself is durable.
 */
export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Writes all of buf at the file position (writeSync may write less than asked). */
function writeAll(fd: number, buf: Uint8Array): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
}

/** The temp name beside `path`: same directory, marked `.tmp-` so a cleaner can recognise leftovers. */
export function tempPathFor(path: string): string {
  return `${path}.tmp-${process.pid}`;
}

/**
 * Replaces `path` with `data` atomically and durably (temp + fsync + rename + fsync of the
 * directory). On any failure the temp file is removed and `path` keeps its previous content.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  const tmp = tempPathFor(path);
  try {
    const fd = openSync(tmp, 'w');
    try {
      writeAll(fd, typeof data === 'string' ? Buffer.from(data) : data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(dirname(path));
}

/** Appends one line and fsyncs, so a line is either whole on disk or (torn) dropped on resume. */
export function appendLineSync(path: string, line: string): void {
  const fd = openSync(path, 'a');
  try {
    writeAll(fd, Buffer.from(`${line}\n`));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
