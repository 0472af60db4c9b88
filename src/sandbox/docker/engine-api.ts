import { Agent, request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { z } from 'zod';
import { DockerError } from '../docker-cli.ts';

/**
 * The Docker engine's HTTP API over its socket (docs/sandbox.md, "Cost"): what the docker backend
 * does per episode (create, start and attach a container, exec, signal, read a file, remove) as
 * requests on kept-alive connections to the daemon, instead of one `docker` client process each.
 * The daemon is the one DOCKER_HOST names, as for the `docker` client: `unix://PATH` or
 * `tcp://HOST:PORT` (plain HTTP), else the default socket. Bodies the daemon sends back are
 * parsed with zod where they are used.
 */

export interface Endpoint {
  socketPath?: string;
  host?: string;
  port?: number;
}

const DEFAULT_SOCKET = '/var/run/docker.sock';

/** Where DOCKER_HOST points. */
export const engineEndpoint = (): Endpoint => endpointOf(process.env.DOCKER_HOST);

/** Where a DOCKER_HOST value points; an error for what this client cannot reach (TLS, ssh). */
export function endpointOf(value: string | undefined): Endpoint {
  if (value === undefined || value === '') return { socketPath: DEFAULT_SOCKET };
  if (value.startsWith('unix://')) return { socketPath: value.slice('unix://'.length) };
  const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(value);
  if (tcp && process.env.DOCKER_TLS_VERIFY !== '1') return { host: tcp[1]!, port: Number(tcp[2]) };
  throw new DockerError(
    `DOCKER_HOST=${value}: the docker sandbox reaches a daemon over unix://PATH or plain tcp://HOST:PORT only`,
  );
}

/** A kept-alive connection pool: a request costs no new connection while one is idle. */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** The API version used: the daemon's own when older than the one this client was written for. */
const WRITTEN_FOR = '1.41';
let versionPrefix: Promise<string> | null = null;

const VersionSchema = z.object({ ApiVersion: z.string() });

function prefix(): Promise<string> {
  versionPrefix ??= (async () => {
    const r = await send({ method: 'GET', path: '/version', timeoutMs: 15_000, versioned: false });
    if (r.status !== 200) throw new DockerError(`the daemon's /version answered ${r.status}: ${text(r.body)}`);
    const daemon = VersionSchema.parse(JSON.parse(r.body.toString('utf8'))).ApiVersion;
    return `/v${olderVersion(daemon, WRITTEN_FOR)}`;
  })();
  versionPrefix.catch(() => (versionPrefix = null));
  return versionPrefix;
}

/** The older of two API versions (`1.41` < `1.43`). */
export function olderVersion(a: string, b: string): string {
  const [am = 0, an = 0] = a.split('.').map(Number);
  const [bm = 0, bn = 0] = b.split('.').map(Number);
  return am < bm || (am === bm && an < bn) ? a : b;
}

export interface EngineRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD';
  /** e.g. `/containers/create`, without the version prefix. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** JSON for an object, bytes as they are. */
  body?: unknown;
  timeoutMs?: number;
  /** Longest body kept; the rest is dropped and `truncated` set. */
  maxBytes?: number;
}

export interface EngineResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
}

/** One request to the daemon; never throws for an HTTP status (the caller reads it), only when no answer comes. */
export async function engine(options: EngineRequest): Promise<EngineResponse> {
  return send({ ...options, versioned: true });
}

/** A request that must answer 2xx: its JSON body parsed with `schema`, or a DockerError naming the call. */
export async function engineJson<T>(schema: z.ZodType<T>, options: EngineRequest): Promise<T> {
  const r = await engine(options);
  if (r.status < 200 || r.status > 299) throw engineError(options, r);
  const parsed = schema.safeParse(r.body.length === 0 ? {} : JSON.parse(r.body.toString('utf8')));
  if (!parsed.success) throw new DockerError(`${describe(options)}: unexpected answer ${text(r.body)}`);
  return parsed.data;
}

/** A request that must answer 2xx, its body unused. */
export async function engineOk(options: EngineRequest): Promise<void> {
  const r = await engine(options);
  if (r.status < 200 || r.status > 299) throw engineError(options, r);
}

export function engineError(options: EngineRequest, r: EngineResponse): DockerError {
  return new DockerError(`${describe(options)} answered ${r.status}: ${text(r.body)}`);
}

/** The daemon's `{"message": ...}`, or the body's first bytes. */
export function text(body: Buffer): string {
  const raw = body.toString('utf8');
  try {
    const m = z.object({ message: z.string() }).safeParse(JSON.parse(raw));
    if (m.success) return m.data.message.slice(0, 400);
  } catch {
    // not JSON
  }
  return raw.trim().slice(0, 400);
}

const describe = (o: EngineRequest): string => `docker API ${o.method} ${o.path}`;

function target(endpoint: Endpoint, path: string): { socketPath?: string; host?: string; port?: number; path: string } {
  return endpoint.socketPath !== undefined
    ? { socketPath: endpoint.socketPath, path }
    : { host: endpoint.host!, port: endpoint.port!, path };
}

function pathOf(path: string, query: EngineRequest['query']): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

function encode(body: unknown): { bytes: Buffer | null; type: string | null } {
  if (body === undefined) return { bytes: null, type: null };
  if (Buffer.isBuffer(body)) return { bytes: body, type: 'application/x-tar' };
  return { bytes: Buffer.from(JSON.stringify(body)), type: 'application/json' };
}

async function send(options: EngineRequest & { versioned: boolean }): Promise<EngineResponse> {
  const endpoint = engineEndpoint();
  const path = (options.versioned ? await prefix() : '') + pathOf(options.path, options.query);
  const { bytes, type } = encode(options.body);
  const max = options.maxBytes ?? 64 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...target(endpoint, path),
        method: options.method,
        agent,
        headers: {
          ...(type ? { 'Content-Type': type } : {}),
          ...(bytes ? { 'Content-Length': bytes.length } : {}),
        },
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        let truncated = false;
        res.on('data', (d: Buffer) => {
          if (kept >= max) return void (truncated = true);
          chunks.push(d.subarray(0, max - kept));
          if (d.length > max - kept) truncated = true;
          kept += Math.min(d.length, max - kept);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 120_000, () =>
      req.destroy(
        new DockerError(`${describe(options)}: no answer in ${Math.round((options.timeoutMs ?? 120_000) / 1000)} s`),
      ),
    );
    req.on('error', (e) =>
      reject(
        e instanceof DockerError
          ? e
          : new DockerError(`${describe(options)}: the daemon cannot be reached (${e.message})`),
      ),
    );
    req.end(bytes ?? undefined);
  });
}

/**
 * A request the daemon answers by handing over the connection (exec start, attach): the raw
 * socket, with the bytes it already read. An answer that is not an upgrade is a DockerError.
 */
export async function engineHijack(
  options: Omit<EngineRequest, 'maxBytes'>,
): Promise<{ socket: Socket; head: Buffer }> {
  const endpoint = engineEndpoint();
  const path = (await prefix()) + pathOf(options.path, options.query);
  const { bytes, type } = encode(options.body ?? {});
  return new Promise((resolve, reject) => {
    const req = request({
      ...target(endpoint, path),
      method: options.method,
      agent: false, // the connection becomes the stream: never back in the pool
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'tcp',
        ...(type ? { 'Content-Type': type } : {}),
        ...(bytes ? { 'Content-Length': bytes.length } : {}),
      },
    });
    const timer = setTimeout(
      () =>
        req.destroy(
          new DockerError(`${describe(options)}: no answer in ${Math.round((options.timeoutMs ?? 120_000) / 1000)} s`),
        ),
      options.timeoutMs ?? 120_000,
    );
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      clearTimeout(timer);
      resolve({ socket, head });
    });
    req.on('response', (res: IncomingMessage) => {
      clearTimeout(timer);
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.length < 64 && chunks.push(d));
      res.on('end', () =>
        reject(
          engineError(options, {
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            truncated: false,
          }),
        ),
      );
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(
        e instanceof DockerError
          ? e
          : new DockerError(`${describe(options)}: the daemon cannot be reached (${e.message})`),
      );
    });
    req.end(bytes ?? undefined);
  });
}
