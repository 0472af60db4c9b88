/**
 * A mistake the user can fix (a bad flag, a missing file). The CLI prints its message and exits 2,
 * never a stack trace (house style habit 10).
 */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** Error classes whose messages already say what to do: shown as-is, without a stack. */
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
]);

/**
 * Prints an error for a person and returns the exit code: 2 for user errors, 1 for anything else
 * (those are bugs; CRL_DEBUG=1 shows the stack).
 */
export function reportError(e: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  const err = e instanceof Error ? e : new Error(String(e));
  if (USER_ERRORS.has(err.name)) {
    stderr.write(`crl: error: ${err.message}\n`);
    return 2;
  }
  if (process.env.CRL_DEBUG) stderr.write(`${err.stack ?? err.message}\n`);
  else stderr.write(`crl: internal error: ${err.message}\n(rerun with CRL_DEBUG=1 for a stack trace)\n`);
  return 1;
}
