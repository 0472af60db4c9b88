import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

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

/**
 * Most bytes asked of one writeSync: Node refuses a length above 2^31 - 1, and a 0.6B model's f32
 * weights alone are 2.38 GB in one safetensors tensor run.
 */
const MAX_WRITE = 1 << 30;

/** Writes all of buf at the file position (writeSync may write less than asked). */
export function writeAll(fd: number, buf: Uint8Array): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, Math.min(buf.length - off, MAX_WRITE));
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
  writeChunksAtomic(path, [typeof data === 'string' ? Buffer.from(data) : data]);
}

/**
 * writeFileAtomic for content made piece by piece (a model file of gigabytes): each chunk is
 * written as the iterable yields it, so only one chunk needs to be in memory at a time.
 */
export function writeChunksAtomic(path: string, chunks: Iterable<Uint8Array>): void {
  const tmp = tempPathFor(path);
  try {
    const fd = openSync(tmp, 'w');
    try {
      for (const chunk of chunks) writeAll(fd, chunk);
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

/**
 * `mkdir -p` that cannot hang: walks up to the nearest existing ancestor, then creates each missing
 * level once. (Node's recursive mkdirSync loops forever when a level can never be created, as
 * under /proc.) Errors carry code, syscall and path like Node's own.
 */
export function ensureDir(dir: string): void {
  const missing: string[] = [];
  let d = resolve(dir);
  for (;;) {
    try {
      if (statSync(d).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${d}'`), {
        code: 'ENOTDIR',
        syscall: 'mkdir',
        path: d,
      });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      const up = dirname(d);
      if (up === d) throw e;
      missing.push(d);
      d = up;
    }
  }
  for (const m of missing.reverse()) {
    try {
      mkdirSync(m);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/**
 * A line-oriented output that appears whole or not at all: lines go to `<path>.partial-<pid>`
 * beside the target as they come (a crash keeps them there), commit() fsyncs and renames it over
 * the target, abort() removes it. An existing target is untouched until commit().
 */
export class AtomicLineWriter {
  readonly partialPath: string;
  private fd: number | null;
  lines = 0;

  constructor(readonly path: string) {
    this.partialPath = `${path}.partial-${process.pid}`;
    this.fd = openSync(this.partialPath, 'w');
  }

  append(line: string): void {
    if (this.fd === null) throw new Error(`${this.path}: append after commit or abort`);
    writeAll(this.fd, Buffer.from(`${line}\n`));
    this.lines++;
  }

  commit(): void {
    if (this.fd === null) throw new Error(`${this.path}: commit after commit or abort`);
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = null;
    renameSync(this.partialPath, this.path);
    fsyncDir(dirname(this.path));
  }

  /** Drops the partial file; with keepIfNonEmpty, lines already written stay at partialPath. */
  abort(options: { keepIfNonEmpty?: boolean } = {}): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
    if (!(options.keepIfNonEmpty && this.lines > 0)) rmSync(this.partialPath, { force: true });
  }
}
