/**
 * One bounded, cancellable environment call. The runtime gives every reset, step and close a
 * deadline; an environment that throws, rejects or misses it has failed (EnvCallError), which ends
 * only its own episode. When the whole run is cancelled (`parent` aborts) the call rejects with
 * the parent's reason instead, so the runner can tell a failing environment from a stopped run.
 */
import { faultKindOf, type FaultKind } from '../contracts/index.ts';

export class EnvCallError extends Error {
  constructor(
    readonly reason: 'timeout' | 'error',
    message: string,
    /** Whose fault: the kind the environment's error named, else 'environment' (contracts/fault.ts). */
    readonly fault: FaultKind = 'environment',
  ) {
    super(message);
    this.name = 'EnvCallError';
  }
}

export async function callEnv<T>(options: {
  during: 'reset' | 'step' | 'close';
  f: (signal: AbortSignal) => T | Promise<T>;
  timeoutMs: number;
  parent?: AbortSignal;
}): Promise<T> {
  const { during, f, timeoutMs, parent } = options;
  if (parent?.aborted) throw reasonOf(parent);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onParentAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = new EnvCallError('timeout', `the environment's ${during} did not finish within ${timeoutMs} ms`);
      controller.abort(e);
      reject(e);
    }, timeoutMs);
    onParentAbort = () => {
      const reason = reasonOf(parent!);
      controller.abort(reason);
      reject(reason);
    };
    parent?.addEventListener('abort', onParentAbort, { once: true });
  });
  stopped.catch(() => undefined); // settled by the race below; never an unhandled rejection
  try {
    // f may throw synchronously (an in-process environment) or return a value or a promise.
    const work = (async () => f(controller.signal))().catch((e: unknown) => {
      if (controller.signal.aborted) throw reasonOf(controller.signal);
      throw new EnvCallError('error', `the environment's ${during} failed: ${describe(e)}`, faultKindOf(e));
    });
    return await Promise.race([work, stopped]);
  } finally {
    clearTimeout(timer);
    if (onParentAbort) parent?.removeEventListener('abort', onParentAbort);
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function reasonOf(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error(String(r));
}
