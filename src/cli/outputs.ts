import { accessSync, closeSync, constants, existsSync, openSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ensureDir } from '../util/atomic-write.ts';
import { RUN_FILES } from '../report/run-files.ts';
import { CliError } from './errors.ts';

/**
 * The output rule of every command (docs/cli.md, "Outputs"): an output file is written whole, by
 * a rename at the very end, so a command that fails leaves every existing file as it was; an
 * output that already exists is refused unless --force is given; a run directory's own
 * bookkeeping files are never an output. These checks run before any work starts.
 */

/** Files that belong to a run or pipeline directory; --force does not make them outputs. */
const RUN_OWN_FILES = new Set<string>([
  RUN_FILES.config,
  RUN_FILES.metrics,
  RUN_FILES.timing,
  RUN_FILES.pipeline,
  RUN_FILES.latest,
]);

function isRunDir(dir: string): boolean {
  return existsSync(join(dir, RUN_FILES.config)) || existsSync(join(dir, RUN_FILES.pipeline));
}

/** No write bit for anyone: read-only by the owner's choice, refused even for root. */
const readOnly = (mode: number) => (mode & 0o222) === 0;

/**
 * Creates the parent directory and proves a file can be created in it (the same partial file name
 * the writer uses), so a bad path fails now, not after the work; errors name the flag.
 */
function writableParent(path: string, flag: string): void {
  const dir = dirname(path);
  const probe = `${path}.partial-${process.pid}`;
  try {
    ensureDir(dir);
    if (readOnly(statSync(dir).mode)) throw Object.assign(new Error('read-only'), { code: 'EROFS', path: dir });
    accessSync(dir, constants.W_OK);
    closeSync(openSync(probe, 'wx'));
    rmSync(probe);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const what =
      err.code === 'EACCES' || err.code === 'EPERM' || err.code === 'EROFS'
        ? 'is not writable'
        : err.code === 'ENOTDIR'
          ? 'is not a directory (a part of the path is a file)'
          : err.code === 'ENOSPC' || err.code === 'EDQUOT'
            ? 'is on a full disk'
            : 'cannot be created';
    throw new CliError(
      `${flag} ${path}: the directory ${err.path && err.path !== probe ? err.path : dir} ${what}; choose another ${flag}`,
    );
  }
}

/** Checks an output file before any work: not a directory, not a run's own file, absent unless force. */
export function prepareOutputFile(options: { path: string; flag?: string; force: boolean }): string {
  const flag = options.flag ?? '--out';
  const path = resolve(options.path);
  let stat;
  try {
    stat = statSync(path);
  } catch {
    stat = null;
  }
  if (stat?.isDirectory())
    throw new CliError(
      `${flag} ${options.path} is a directory; name a file (for example ${join(options.path, 'out')})`,
    );
  if (RUN_OWN_FILES.has(basename(path)) && isRunDir(dirname(path)))
    throw new CliError(
      `${flag} ${options.path} is a file of the run directory ${dirname(path)}; choose another ${flag}`,
    );
  if (stat && readOnly(stat.mode))
    throw new CliError(
      `${flag} ${options.path} is read-only; make it writable to replace it, or choose another ${flag}`,
    );
  if (stat && !options.force)
    throw new CliError(
      `${flag} ${options.path} already exists; pass --force to replace it (it is replaced only when the command succeeds) or choose another ${flag}`,
    );
  writableParent(path, flag);
  return path;
}

/** Output directory holding several files (crl report): the same rule for each of those files. */
export function prepareOutputFiles(options: { dir: string; files: readonly string[]; force: boolean }): string {
  const dir = resolve(options.dir);
  if (existsSync(dir) && !statSync(dir).isDirectory())
    throw new CliError(`--out ${options.dir} is a file; name a directory`);
  const present = options.files.filter((f) => existsSync(join(dir, f)));
  if (present.length > 0 && !options.force)
    throw new CliError(
      `--out ${options.dir} already holds ${present.join(', ')}; pass --force to replace them (only when the command succeeds) or choose another --out`,
    );
  writableParent(join(dir, options.files[0] ?? 'x'), '--out');
  return dir;
}

/** The --force option, the same on every command that writes files. */
export const FORCE_HELP = 'replace existing output files (only once the command has succeeded)';
