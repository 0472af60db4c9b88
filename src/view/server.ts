import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import {
  EpisodeListResponseSchema,
  ErrorResponseSchema,
  MetricsResponseSchema,
  SourcesResponseSchema,
  type SourcesResponse,
} from './api-schema.ts';
import { buildEpisodeView, episodeBrief } from './episode-view.ts';
import { legendNames } from './legend-names.ts';
import { resolveInside } from './safe-path.ts';
import {
  evalRows,
  hasMetrics,
  openSources,
  reportHref,
  seriesVersion,
  sourceEpisodes,
  sourceIterations,
  sourceSeries,
  type ViewSource,
} from './sources.ts';

/** The built web app (scripts/build-viewer.mjs writes it at install time). */
export const BUNDLE_DIR = fileURLToPath(new URL('../../build/viewer/', import.meta.url));

/** The only address the viewer listens on: it is a local tool, never reachable from the network. */
export const VIEW_HOST = '127.0.0.1';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.md': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.jsonl': 'text/plain; charset=utf-8',
  '.gz': 'application/gzip',
};

// No script but our own bundle; vega evaluates expressions with vega-interpreter, so no eval either.
const CSP =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'";

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sendJson<S extends z.ZodType>(res: ServerResponse, schema: S, body: z.input<S>, status = 200): void {
  const text = JSON.stringify(schema.parse(body)); // a response that breaks its schema is a server bug
  res.writeHead(status, { 'content-type': TYPES['.json']!, 'cache-control': 'no-store' });
  res.end(text);
}

function sendFile(res: ServerResponse, path: string, head: boolean): void {
  const type = TYPES[extname(path)] ?? 'application/octet-stream';
  res.writeHead(200, { 'content-type': type, 'content-length': statSync(path).size });
  if (head) res.end();
  else createReadStream(path).pipe(res);
}

function intParam(s: string | undefined, what: string): number {
  if (s === undefined || !/^\d{1,9}$/.test(s)) throw new HttpError(404, `no such ${what}`);
  return Number(s);
}

export interface ViewServer {
  url: string;
  server: Server;
  sources: ViewSource[];
  close(): Promise<void>;
}

/**
 * `crl view`'s server: Node's http on 127.0.0.1 only. Serves the built web app, a JSON API over the
 * given runs (every response validated with src/view/api-schema.ts), and the runs' own files under
 * /files/ (the static report, samples), refusing every path outside the directories it was given.
 */
export async function startViewServer(options: {
  inputs: readonly string[];
  port: number;
  bundleDir?: string;
}): Promise<ViewServer> {
  const bundleDir = options.bundleDir ?? BUNDLE_DIR;
  const { sources, roots, rescan } = openSources(options.inputs);
  const source = (id: string | undefined): ViewSource => {
    const s = sources[intParam(id, 'source')];
    if (!s) throw new HttpError(404, `no source ${id}`);
    return s;
  };

  // Asked again and again by a page that follows a live run, so each ask looks for new runs too.
  const sourcesResponse = (): SourcesResponse => {
    rescan();
    const { evals, warnings } = evalRows(roots);
    const names = legendNames(sources);
    return {
      sources: sources.map((s) => ({
        id: s.id,
        kind: s.kind,
        label: s.label,
        name: names.get(s.id)!,
        group: s.group,
        system: s.system,
        seed: s.seed,
        env: s.env,
        iterations: sourceIterations(s),
        hasMetrics: hasMetrics(s),
        version: seriesVersion(s),
        reportHref: reportHref(s, roots),
      })),
      evals,
      warnings,
    };
  };

  const api = async (parts: string[], res: ServerResponse): Promise<void> => {
    // /api/sources[/ID/metrics | /ID/iterations/IT[/episodes/K]]
    if (parts.length === 1 && parts[0] === 'sources') return sendJson(res, SourcesResponseSchema, sourcesResponse());
    if (parts[0] !== 'sources') throw new HttpError(404, 'no such API');
    const s = source(parts[1]);
    if (parts.length === 3 && parts[2] === 'metrics')
      return sendJson(res, MetricsResponseSchema, { source: s.id, series: sourceSeries(s) });
    if (parts[2] !== 'iterations') throw new HttpError(404, 'no such API');
    const iteration = intParam(parts[3], 'iteration');
    const episodes = sourceEpisodes(s, iteration);
    if (!episodes) throw new HttpError(404, `${s.label} has no saved episodes for iteration ${iteration}`);
    if (parts.length === 4)
      return sendJson(res, EpisodeListResponseSchema, {
        source: s.id,
        iteration,
        episodes: episodes.map((e, i) => episodeBrief(e, i)),
      });
    if (parts.length === 6 && parts[4] === 'episodes') {
      const index = intParam(parts[5], 'episode');
      const episode = episodes[index];
      if (!episode) throw new HttpError(404, `no episode ${index} in iteration ${iteration}`);
      const view = await buildEpisodeView({ episode, source: s.id, iteration, index });
      res.writeHead(200, { 'content-type': TYPES['.json']!, 'cache-control': 'no-store' });
      res.end(JSON.stringify(view)); // buildEpisodeView validated it
      return;
    }
    throw new HttpError(404, 'no such API');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, port: number): Promise<void> => {
    res.setHeader('content-security-policy', CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    // DNS rebinding: a page on another site resolving its name to 127.0.0.1 still sends its own Host.
    const host = req.headers.host ?? '';
    if (host !== `${VIEW_HOST}:${port}` && host !== `localhost:${port}`) throw new HttpError(403, 'unexpected Host');
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'read-only server');
    // The raw path, not a normalized URL: normalizing would turn /files/0/../x into /x silently.
    const rawPath = (req.url ?? '/').split(/[?#]/)[0]!;
    if (!rawPath.startsWith('/')) throw new HttpError(400, 'bad path');
    const head = req.method === 'HEAD';
    if (rawPath.startsWith('/api/')) {
      const parts = rawPath
        .slice('/api/'.length)
        .split('/')
        .filter((p) => p !== '');
      return api(parts, res);
    }
    if (rawPath.startsWith('/files/')) {
      const [rootId, ...rest] = rawPath.slice('/files/'.length).split('/');
      const root = roots[intParam(rootId, 'directory')];
      const file = root === undefined ? null : resolveInside(root, rest.join('/'));
      if (!file) throw new HttpError(404, 'no such file under the given directories');
      return sendFile(res, file, head);
    }
    const file = resolveInside(bundleDir, rawPath === '/' ? 'index.html' : rawPath.slice(1));
    if (!file) throw new HttpError(404, 'not found');
    return sendFile(res, file, head);
  };

  if (!existsSync(join(bundleDir, 'index.html')))
    throw new Error(
      `the viewer's web app is not built (${join(bundleDir, 'index.html')} is missing); run npm run build:viewer`,
    );
  const server = createServer((req, res) => {
    const port = (server.address() as AddressInfo).port;
    handle(req, res, port).catch((e: unknown) => {
      const status = e instanceof HttpError ? e.status : 500;
      const message = e instanceof Error ? e.message : String(e);
      if (status === 500) process.stderr.write(`crl view: ${message}\n`);
      if (res.headersSent) return void res.destroy();
      sendJson(res, ErrorResponseSchema, { error: message }, status);
    });
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(options.port, VIEW_HOST, () => ok());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${VIEW_HOST}:${port}/`,
    server,
    sources,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
