import { readFileSync } from 'node:fs';
import { CommanderError } from 'commander';

/**
 * A mistake the user can fix (a bad flag, a missing file, an existing output). The CLI prints its
 * message, which says what to do, and exits 2, never with a stack trace (house style habit 10).
 */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** The user stopped a command (Ctrl-C, SIGTERM): exit 128 + the signal's number, as shells do. */
export class InterruptedError extends Error {
  readonly exitCode: number;
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(`interrupted (${signal})`);
    this.name = 'InterruptedError';
    this.exitCode = signal === 'SIGINT' ? 130 : 143;
  }
}

/**
 * User-error classes of the lower layers, by name (they cannot import cli/: imports flow one way).
 * Their messages already say what to do, so they are shown as they are, without a stack.
 */
const USER_ERRORS = new Set([
  'CliError',
  'ConfigError',
  'RolloutConfigError',
  'InstructionTooLongError',
  'UnknownWordError',
  'RecordParseError',
  'CheckpointFormatError',
  'SequenceTooLongError',
  'EngineError',
  // An engine fault that reached the top without a runner to end its episode (docs/faults.md).
  'EngineFault',
  'SamplerFault',
  'MixedRunError',
  'LlamaCppError',
  'TokenizerError',
  'TokenizerMismatchError',
  'ChatTemplateError',
  'KnobsError',
  'HarborTaskError',
  'ViewInputError',
  'SandboxUnavailableError',
  'PolicySourceError',
  'QueueError',
  'TorchTrainerError',
  'FaultBudgetError',
  'WeightPrecisionError',
]);

/**
 * File-system failures caused by the paths a user named (a read-only directory, a directory where
 * a file should be, a full disk), by errno code, with what to do about each.
 */
const FS_USER_ERRORS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied; choose a path you can write to',
  EPERM: 'operation not permitted; choose a path you can write to',
  EROFS: 'the file system is read-only; choose another path',
  EISDIR: 'it is a directory; name a file inside it instead',
  ENOTDIR: 'a part of the path is a file, not a directory; check the path',
  ENOENT: 'no such file or directory; check the path',
  ENOSPC: 'the disk is full; free space or choose another path',
  EDQUOT: 'the disk quota is exceeded; free space or choose another path',
  ENAMETOOLONG: 'the path is too long; choose a shorter one',
  ELOOP: 'too many symbolic links in the path; check the path',
};

export function isUserError(e: unknown): boolean {
  return e instanceof Error && USER_ERRORS.has(e.name);
}

/** Where internal errors are reported: package.json's `bugs` (or `repository`) address, if set. */
function issueTracker(): string | null {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      bugs?: string | { url?: string };
      repository?: string | { url?: string };
    };
    const bugs = typeof pkg.bugs === 'string' ? pkg.bugs : pkg.bugs?.url;
    if (bugs) return bugs;
    const repo = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
    return repo ? `${repo.replace(/^git\+/, '').replace(/\.git$/, '')}/issues` : null;
  } catch {
    return null;
  }
}

/**
 * Prints an error for a person and returns the exit code (docs/cli.md, "Exit codes"):
 * - 0: commander printed --help or the version;
 * - 2: a user mistake: a bad option (commander already printed it), a typed user error, or a
 *   file-system error on a path the user named; one short paragraph that says what to do;
 * - 1: anything else is a bug in crl: "internal error" and where to report it
 *   (CRL_DEBUG=1 prints the stack).
 */
export function reportError(e: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
  const err = e instanceof Error ? e : new Error(String(e));
  if (err instanceof InterruptedError) {
    stderr.write(`crl: ${err.message}\n`);
    return err.exitCode;
  }
  if (USER_ERRORS.has(err.name)) {
    stderr.write(`crl: error: ${err.message}\n`);
    return 2;
  }
  const sys = err as NodeJS.ErrnoException;
  const hint = sys.code ? FS_USER_ERRORS[sys.code] : undefined;
  if (hint && typeof sys.path === 'string') {
    stderr.write(`crl: error: cannot ${sys.syscall ?? 'use'} ${sys.path}: ${hint}\n`);
    return 2;
  }
  if (process.env.CRL_DEBUG) stderr.write(`${err.stack ?? err.message}\n`);
  const tracker = issueTracker();
  stderr.write(
    `crl: internal error: ${err.message}\n` +
      `This is a bug in crl, not in what you typed. Please report it${tracker ? ` at ${tracker}` : " on the project's issue tracker"} ` +
      `with the command you ran and this output${process.env.CRL_DEBUG ? '' : ' (rerun with CRL_DEBUG=1 to add the stack trace)'}.\n`,
  );
  return 1;
}
