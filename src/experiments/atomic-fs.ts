import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Crash-safe file writes. A kill -9 can land anywhere, so every file that resume reads is either
 * complete or absent: write a temp file, fsync it, rename over the target (atomic on POSIX), fsync
 * the directory so the rename itself survives a power cut.
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

export function writeFileSync_fsync(path: string, data: string | Uint8Array): void {
  const fd = openSync(path, 'w');
  try {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync_fsync(tmp, data);
  renameSync(tmp, path);
  fsyncDir(dirname(path));
}

/** Appends one line and fsyncs, so a line is either whole on disk or (torn) dropped on resume. */
export function appendLineSync(path: string, line: string): void {
  const fd = openSync(path, 'a');
  try {
    writeSync(fd, `${line}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
