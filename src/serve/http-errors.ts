import type { ServerResponse } from 'node:http';
import type { HttpError } from './http-guard.ts';

/** OpenAI error types by status (the `type` of `{ error: { message, type, param, code } }`). */
const ERROR_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  403: 'PermissionDeniedError',
  404: 'NotFoundError',
  408: 'RequestTimeoutError',
  413: 'RequestTooLargeError',
  415: 'UnsupportedMediaTypeError',
  429: 'RateLimitError',
  503: 'ServiceUnavailableError',
};

/** A JSON answer; nothing if one was already sent. */
export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * The body of an error: the OpenAI shape (`{ error: { message, type, param, code } }`), or for the
 * admin endpoint SGLang's `{ success: false, message }`.
 */
export function errorBody(err: HttpError, admin: boolean): unknown {
  return admin
    ? { success: false, message: err.message }
    : {
        error: {
          message: err.message,
          type: err.type ?? ERROR_TYPES[err.status] ?? 'InternalServerError',
          param: null,
          code: err.status,
        },
      };
}

/**
 * A refused request's body may still be arriving: it is read and discarded first (never kept), so
 * the client, still sending, gets the answer; past DRAIN_CAP bytes the answer goes out at once and
 * the connection is cut. The body deadline (request-slots.ts) bounds the drain in time.
 */
const DRAIN_CAP = 16 << 20;

export function sendError(res: ServerResponse, err: HttpError, admin: boolean): void {
  const body = errorBody(err, admin);
  const req = res.req;
  if (req.readableEnded) return send(res, err.status, body, err.headers);
  const answer = () => send(res, err.status, body, { ...err.headers, connection: 'close' });
  let left = DRAIN_CAP;
  req.on('data', (c: Buffer) => {
    left -= c.length;
    if (left < 0 && !res.headersSent) {
      answer();
      res.once('finish', () => req.socket.destroy());
    }
  });
  req.once('end', answer);
  req.resume();
}

/** Answers at once, without waiting for the rest of the body, and closes the connection after the answer. */
export function sendErrorAndClose(res: ServerResponse, err: HttpError, admin: boolean): void {
  const req = res.req;
  if (res.headersSent) {
    req.socket.destroy();
    return;
  }
  send(res, err.status, errorBody(err, admin), { ...err.headers, connection: 'close' });
  res.once('finish', () => req.socket.destroy());
}
