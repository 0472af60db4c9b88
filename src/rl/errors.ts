/**
 * Input errors the RL core raises. Every message names the offending field and segment so a caller
 * can fix the batch without reading a stack trace (house style §10).
 */
export class RlInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RlInputError';
  }
}

/** Throws unless `value` is a finite number. */
export function requireFinite(value: number, what: string): void {
  if (!Number.isFinite(value)) throw new RlInputError(`${what} must be a finite number, got ${value}`);
}

/** Throws unless `value` is finite and in [lo, hi]. */
export function requireInRange(options: { value: number; lo: number; hi: number; what: string }): void {
  const { value, lo, hi, what } = options;
  requireFinite(value, what);
  if (value < lo || value > hi) throw new RlInputError(`${what} must be in [${lo}, ${hi}], got ${value}`);
}

/** Throws unless every entry of a loss mask is 0 or 1. */
export function requireBinaryMask(mask: Uint8Array, what: string): void {
  for (let t = 0; t < mask.length; t++) {
    const m = mask[t]!;
    if (m !== 0 && m !== 1) throw new RlInputError(`${what}[${t}] must be 0 or 1, got ${m}`);
  }
}

/** Throws unless two per-token arrays have the same length. */
export function requireSameLength(options: { a: ArrayLike<unknown>; b: ArrayLike<unknown>; what: string }): void {
  const { a, b, what } = options;
  if (a.length !== b.length) throw new RlInputError(`${what}: lengths differ (${a.length} vs ${b.length})`);
}
