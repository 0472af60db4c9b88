import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/**
 * What a task folder provides, read or copied without trusting it (docs/harbor.md "What a folder
 * may hold"): a file is read only if it is a regular file inside the folder (no link, device,
 * FIFO or socket) and under a size bound; a directory tree (tests/, environment/, solution/) holds
 * only regular files, directories and relative links that stay inside that tree. Errors name the
 * path and what is wrong with it, never the file's content.
 */
export class TaskFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TaskFileError';
  }
}

/** Largest text file read from a task folder (instruction.md, task.toml, setup.sh). */
export const MAX_TASK_FILE_BYTES = 1024 * 1024;
/** Most entries in one tree: a bound on the load-time walk and on what each episode copies. */
export const MAX_TREE_ENTRIES = 100_000;

function kindOf(st: {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isBlockDevice(): boolean;
  isCharacterDevice(): boolean;
}): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isBlockDevice() || st.isCharacterDevice()) return 'a device';
  if (st.isDirectory()) return 'a directory';
  if (st.isFile()) return 'a regular file';
  return 'not a regular file';
}

/**
 * Reads `rel` under the task folder `dir` as UTF-8: the path and every folder on the way must be
 * real (no link), the file regular and at most `maxBytes`. Opened with O_NOFOLLOW | O_NONBLOCK, so
 * a link swapped in after the check, or a FIFO, neither follows nor blocks.
 */
export function readTaskFile({
  dir,
  rel,
  maxBytes = MAX_TASK_FILE_BYTES,
}: {
  dir: string;
  rel: string;
  maxBytes?: number;
}): string {
  const path = join(dir, rel);
  checkNoLinkOnTheWay(dir, rel);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    throw new TaskFileError(`${path} cannot be opened (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new TaskFileError(`${path} must be a regular file; it is ${kindOf(st)}`);
    if (st.size > maxBytes)
      throw new TaskFileError(`${path} is ${st.size} bytes; a task file may hold at most ${maxBytes}`);
    const buf = Buffer.alloc(st.size);
    let n = 0;
    while (n < st.size) {
      const got = readSync(fd, buf, n, st.size - n, n);
      if (got === 0) break;
      n += got;
    }
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Every component of `rel` below `dir` must be a real directory or, last, a non-link. */
function checkNoLinkOnTheWay(dir: string, rel: string): void {
  const parts = rel.split(/[\\/]/).filter((p) => p !== '');
  let p = dir;
  for (const part of parts) {
    p = join(p, part);
    const st = lstatOrNull(p);
    if (!st) return; // openSync reports the missing path
    if (st.isSymbolicLink())
      throw new TaskFileError(`${p} is a symbolic link; a task folder's files must be real files inside it`);
  }
}

function lstatOrNull(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** True when `p` is `root` or below it (both absolute and normalized). */
function inside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r) && !r.startsWith(`..${sep}`));
}

/**
 * Checks the tree at `root` (a real directory): only regular files, directories and relative
 * links whose target stays inside `root`; at most MAX_TREE_ENTRIES entries. Throws TaskFileError
 * naming the first offending path.
 */
export function checkTaskTree(root: string): void {
  const top = lstatOrNull(root);
  if (!top) throw new TaskFileError(`${root} is missing`);
  if (!top.isDirectory()) throw new TaskFileError(`${root} must be a directory; it is ${kindOf(top)}`);
  let entries = 0;
  const stack = [root];
  while (stack.length > 0) {
    const d = stack.pop()!;
    for (const name of readdirSync(d)) {
      if (++entries > MAX_TREE_ENTRIES) throw new TaskFileError(`${root} holds more than ${MAX_TREE_ENTRIES} entries`);
      const p = join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) stack.push(p);
      else if (st.isSymbolicLink()) {
        const target = readlinkSync(p);
        if (isAbsolute(target) || !inside(root, resolve(dirname(p), target)))
          throw new TaskFileError(
            `${p} is a symbolic link that points outside ${root}; links in a task folder must be relative and stay inside it`,
          );
      } else if (!st.isFile())
        throw new TaskFileError(`${p} is ${kindOf(st)}; a task folder holds only files and directories`);
    }
  }
}
