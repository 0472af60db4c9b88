import { existsSync, lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { checkTaskTree, readTaskFile, TaskFileError } from './task-files.ts';
import { TaskTomlSchema, type TaskToml } from './task-toml.ts';

/**
 * Harbor task folders (the Terminal-Bench 2.0 format, docs/harbor.md):
 *
 *   instruction.md      what the agent is told
 *   task.toml           timeouts and resources
 *   environment/        the starting state: a Dockerfile (built and run by the docker sandbox),
 *                       or a directory tree copied into the workspace and/or setup.sh run inside
 *                       the bwrap sandbox
 *   tests/test.sh       the verifier; writes /logs/verifier/reward.txt or reward.json
 *   solution/solve.sh   the reference solution (optional; the harbor-oracle policy runs it)
 */

/** A task folder that cannot run here; the message says what is wrong and what is supported. */
export class HarborTaskError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HarborTaskError';
  }
}

export interface HarborTask {
  /** The folder's name (Harbor's convention) unless task.toml names it. */
  name: string;
  dir: string;
  instruction: string;
  config: TaskToml;
  /** environment/ without the files that describe how to build it (copied into the workspace), or null. */
  environmentDir: string | null;
  /** Entries of environmentDir that are not copied (Dockerfile, compose files, setup.sh). */
  environmentSkip: readonly string[];
  /** environment/setup.sh's text, run with bash in the sandbox before the agent starts, or null. */
  setupScript: string | null;
  testsDir: string;
  /** solution/ (holding solve.sh), or null when the task has none. */
  solutionDir: string | null;
  /** environment/ holds a Dockerfile (the docker sandbox builds it; env/harbor/task-sandbox.ts). */
  dockerfile: boolean;
  /** Build files in environment/ (Dockerfile, compose files): without setup.sh, bwrap cannot run the task. */
  buildFiles: readonly string[];
}

/** Files in environment/ that describe a container build rather than the starting files. */
const BUILD_FILES = ['Dockerfile', 'docker-compose.yaml', 'docker-compose.yml', 'compose.yaml', 'compose.yml'];
export const SETUP_SCRIPT = 'setup.sh';

export const BWRAP_SUPPORTED =
  'The bwrap sandbox runs environment/ as a directory tree that is copied into the workspace (/app), and/or ' +
  'environment/setup.sh, run with bash inside the sandbox before the agent starts (no network, system ' +
  'directories read-only). Add environment/setup.sh that does what the Dockerfile does with the tools ' +
  'already installed (an empty one if the Dockerfile only copies files), and the Dockerfile is then ignored.';

/** Loads one task folder, checking everything a run needs before any sandbox starts. */
export function loadHarborTask(dir: string): HarborTask {
  try {
    return loadTask(dir);
  } catch (e) {
    // A file that is a link, a device, a FIFO or too large: the message names it, never its content.
    if (e instanceof TaskFileError) throw new HarborTaskError(e.message);
    throw e;
  }
}

function loadTask(dir: string): HarborTask {
  // The folder itself may be reached through a link; everything in it must then stay inside it.
  const abs = realpathSync(resolve(dir));
  const need = (rel: string, what: string): string => {
    const p = join(abs, rel);
    if (!existsSync(p) && lstatOrNull(p) === null) throw new HarborTaskError(`${abs}: ${rel} is missing (${what})`);
    return p;
  };
  need('instruction.md', 'the task instruction');
  const instruction = readTaskFile({ dir: abs, rel: 'instruction.md' });
  const tomlPath = need('task.toml', 'timeouts and resources');
  const tomlText = readTaskFile({ dir: abs, rel: 'task.toml' });
  let config: TaskToml;
  try {
    const parsed = TaskTomlSchema.safeParse(parseToml(tomlText));
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      throw new HarborTaskError(`${tomlPath}: ${issues}`);
    }
    config = parsed.data;
  } catch (e) {
    if (e instanceof HarborTaskError) throw e;
    // smol-toml's message quotes the offending line; say where it is instead.
    const at = e as { line?: unknown; column?: unknown };
    const where = typeof at.line === 'number' ? ` (line ${at.line}, column ${String(at.column)})` : '';
    throw new HarborTaskError(`${tomlPath} is not valid TOML${where}`);
  }
  const testsDir = join(abs, 'tests');
  need(join('tests', 'test.sh'), 'the verifier, which writes /logs/verifier/reward.txt or reward.json');
  checkTaskTree(testsDir);
  requireRegularFile(join(testsDir, 'test.sh'));

  const envDir = join(abs, 'environment');
  let environmentDir: string | null = null;
  let setupScript: string | null = null;
  const skip: string[] = [];
  const buildFiles: string[] = [];
  if (lstatOrNull(envDir) !== null) {
    checkTaskTree(envDir);
    const entries = readdirSync(envDir);
    const build = entries.filter((e) => BUILD_FILES.includes(e));
    if (entries.includes(SETUP_SCRIPT)) {
      setupScript = readTaskFile({ dir: abs, rel: join('environment', SETUP_SCRIPT) });
    }
    buildFiles.push(...build);
    skip.push(...build, ...(setupScript !== null ? [SETUP_SCRIPT] : []));
    if (entries.some((e) => !skip.includes(e))) environmentDir = envDir;
  }
  const solution = join(abs, 'solution');
  let solutionDir: string | null = null;
  if (lstatOrNull(solution) !== null) {
    checkTaskTree(solution);
    if (lstatOrNull(join(solution, 'solve.sh')) !== null) {
      requireRegularFile(join(solution, 'solve.sh'));
      solutionDir = solution;
    }
  }
  return {
    name: config.task?.name ?? basename(abs),
    dir: abs,
    instruction,
    config,
    environmentDir,
    environmentSkip: skip,
    setupScript,
    testsDir,
    solutionDir,
    dockerfile: buildFiles.includes('Dockerfile'),
    buildFiles,
  };
}

function lstatOrNull(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** The script a sandbox runs by name must be a file (a link inside the tree is not enough). */
function requireRegularFile(p: string): void {
  const st = lstatOrNull(p);
  if (!st?.isFile()) throw new HarborTaskError(`${p} must be a regular file`);
}

/** `harbor:PATH`: one task folder, or a folder whose subfolders are task folders (sorted by name). */
export function loadHarborTasks(path: string): HarborTask[] {
  const abs = resolve(path);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) {
    throw new HarborTaskError(`${abs} is not a directory (expected a Harbor task folder or a folder of them)`);
  }
  if (isTaskFolder(abs)) return [loadHarborTask(abs)];
  const subdirs = readdirSync(abs)
    .sort()
    .map((n) => join(abs, n))
    .filter((p) => isDirectory(p) && isTaskFolder(p));
  if (subdirs.length === 0) {
    throw new HarborTaskError(
      `${abs} holds no Harbor task folder (a folder with task.toml or instruction.md, and tests/test.sh)`,
    );
  }
  return subdirs.map(loadHarborTask);
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false; // a dangling link is not a task folder
  }
}

function isTaskFolder(dir: string): boolean {
  return existsSync(join(dir, 'task.toml')) || existsSync(join(dir, 'instruction.md'));
}
