import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, readJsonBody } from './http-guard.ts';

/**
 * Bounds that keep slow or greedy clients from starving the others (docs/decisions/0019, 0029).
 * A request passes three gates: a connection (`connections`), a place to have its body read
 * (`reading`, within `bodyTimeoutMs`), and only once its body is read and parsed, a slot among
 * the requests being served (`concurrent`). A client that sends its body slowly or not at all
 * therefore holds a reading place for at most the body deadline, and never a serving slot.
 */
export interface ServerLimits {
  /** Largest body of a sampling request. */
  bodyBytes: number;
  /** Largest body of the admin endpoint (a JSON object with one path). */
  adminBodyBytes: number;
  /** POST requests being served at once (body read); more get 503 with Retry-After. */
  concurrent: number;
  /** POST bodies being received at once (memory: at most reading x bodyBytes); more get 503 with Retry-After. */
  reading: number;
  /** Open connections; the server closes any beyond it at once. */
  connections: number;
  /** A request's body must have arrived within this many ms of its headers; else 408 and the connection is closed. */
  bodyTimeoutMs: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  bodyBytes: 1 << 20,
  adminBodyBytes: 16 << 10,
  concurrent: 32,
  reading: 128,
  connections: 1024,
  bodyTimeoutMs: 10_000,
};

const busy = (what: string) => new HttpError(503, `busy: ${what}; retry shortly`, { 'retry-after': '1' });

/** The reading places and serving slots of one server. */
export class RequestSlots {
  private reading = 0;
  private serving = 0;

  constructor(private readonly limits: ServerLimits) {}

  /**
   * Reads a JSON body of at most `limit` bytes in a reading place; the place is given back once
   * the body is read, refused, or the connection is gone.
   */
  async readBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<unknown> {
    if (this.reading >= this.limits.reading) throw busy(`${this.limits.reading} request bodies are being received`);
    this.reading++;
    let held = true;
    const release = () => {
      if (held) {
        held = false;
        this.reading--;
      }
    };
    res.once('close', release);
    try {
      return await readJsonBody(req, limit);
    } finally {
      release();
    }
  }

  /** Takes a serving slot until the answer is sent (or the client is gone); 503 when all are taken. */
  serve(res: ServerResponse): void {
    if (this.serving >= this.limits.concurrent) throw busy(`${this.limits.concurrent} requests in progress`);
    this.serving++;
    res.once('close', () => this.serving--);
  }
}

/**
 * Starts the body deadline of one request: unless its body has fully arrived `ms` after its
 * headers, `expire` runs (it answers 408 and closes the connection). Reading or draining a body
 * both count; the time spent serving after the body has arrived does not.
 */
export function startBodyDeadline(options: {
  req: IncomingMessage;
  res: ServerResponse;
  ms: number;
  expire: () => void;
}): void {
  const { req, res } = options;
  const timer = setTimeout(() => {
    if (!req.readableEnded) options.expire();
  }, options.ms);
  const clear = () => clearTimeout(timer);
  req.once('end', clear);
  res.once('close', clear);
}
