import { FAULT_KINDS, faultKindOf, type FaultKind } from '../contracts/index.ts';

/**
 * Whose fault a job's failure was, carried in its failure reason (BullMQ keeps only a string):
 * `engine fault: <message>`. The trainer counts a job the queue gave up on as a faulted episode
 * of that kind (docs/faults.md); the worker names the kind from the error it caught (its
 * `faultKind` field, contracts/fault.ts), so an engine that failed reads `engine` and anything
 * else the worker's environment threw reads `environment`.
 */
export function failureReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `${faultKindOf(error)} fault: ${message}`;
}

/** The kind and message of a failure reason; a reason without a kind (BullMQ's own, an older worker's) is an `environment` fault. */
export function failureOf(reason: string): { kind: FaultKind; message: string } {
  for (const kind of FAULT_KINDS) {
    const prefix = `${kind} fault: `;
    if (reason.startsWith(prefix)) return { kind, message: reason.slice(prefix.length) };
  }
  return { kind: 'environment', message: reason };
}
