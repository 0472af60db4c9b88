/**
 * A server that cannot start as asked (a bad checkpoint, a missing --weights-dir, a port in use).
 * The message says what to do; `crl serve` shows it and exits 2 (src/cli/errors.ts).
 */
export class ServeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServeError';
  }
}
