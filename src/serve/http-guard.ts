import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * Request checks of `crl serve` that run before a body is read (docs/decisions/0019):
 * Host against the bound address (DNS rebinding), Origin (cross-site requests from a browser),
 * Content-Type, a bearer token for the admin endpoint, and a body size bound that is enforced
 * from Content-Length and again while streaming.
 */

/**
 * A refusal with its HTTP status; the server answers it as `{ error: { message, type, … } }`.
 * `type` overrides the one the status implies (vLLM's LoRA routes answer "InvalidUserInput").
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly type?: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i;
const WILDCARD = new Set(['0.0.0.0', '::', '']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host.replace(/^\[|\]$/g, ''));
}

export function isWildcard(host: string): boolean {
  return WILDCARD.has(host.replace(/^\[|\]$/g, ''));
}

/**
 * The Host header a request may carry. A DNS-rebinding page reaches the server under the
 * attacker's host name, so names are refused unless they are "localhost" (for a loopback or
 * wildcard bind), the bound host itself, or named with --allow-host; IP literals are accepted
 * when they are the bound address (any IP for a wildcard bind, any loopback IP for a loopback bind).
 * The port must be the bound port.
 */
export function hostChecker(options: {
  host: string;
  port: number;
  allow?: readonly string[];
}): (h?: string) => boolean {
  const bound = options.host.replace(/^\[|\]$/g, '').toLowerCase();
  const names = new Set((options.allow ?? []).map((n) => n.toLowerCase()));
  names.add(bound);
  if (isLoopback(bound) || isWildcard(bound)) names.add('localhost');
  return (header) => {
    if (!header) return false;
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header.trim().toLowerCase());
    if (!m) return false;
    const name = m[1]!.replace(/^\[|\]$/g, '');
    const port = m[2] === undefined ? 80 : Number(m[2]);
    if (port !== options.port) return false;
    if (names.has(name)) return true;
    if (isIP(name) === 0) return false;
    return isWildcard(bound) || (isLoopback(bound) && isLoopback(name));
  };
}

/**
 * Browsers add Origin (and Sec-Fetch-Site) to cross-site requests; API clients send neither.
 * Anything a browser marks as coming from another site is refused: no page may drive the server.
 */
export function checkOrigin(req: IncomingMessage): void {
  const origin = req.headers.origin;
  const site = req.headers['sec-fetch-site'];
  const sameOrigin = origin === undefined || origin === `http://${req.headers.host ?? ''}`;
  if (!sameOrigin || (typeof site === 'string' && site !== 'same-origin' && site !== 'none'))
    throw new HttpError(403, 'cross-origin requests are refused; call this server from a program, not a web page');
}

/** POST bodies must be declared as JSON: a text/plain form post from a web page is refused unread. */
export function checkJsonContentType(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw new HttpError(415, `Content-Type must be application/json, got ${JSON.stringify(type || '(none)')}`);
}

/** Compares `Authorization: Bearer <token>` in constant time (both sides hashed to one length). */
export function checkBearer(req: IncomingMessage, token: string): void {
  const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  const digest = (s: string) => createHash('sha256').update(s).digest();
  if (!m || !timingSafeEqual(digest(m[1]!.trim()), digest(token)))
    throw new HttpError(401, 'missing or wrong admin token: send Authorization: Bearer <token>', {
      'www-authenticate': 'Bearer realm="crl serve"',
    });
}

/**
 * Reads a JSON body of at most `limit` bytes: a larger Content-Length is refused before any byte
 * is read, and a body without one (chunked) is cut off as soon as it passes the limit.
 */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit)
    return Promise.reject(
      new HttpError(413, `request body of ${declared} bytes is over this endpoint's limit of ${limit} bytes`),
    );
  // Listeners, not `for await`: leaving an async iterator early destroys the socket, and the
  // refusal could not be sent.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        stop();
        reject(new HttpError(413, `request body is over this endpoint's limit of ${limit} bytes`));
      } else chunks.push(c);
    };
    const onEnd = () => {
      stop();
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'request body is not valid JSON'));
      }
    };
    const onError = (e: Error) => {
      stop();
      reject(e);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
