import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PositionLogprobs } from '../model/top-logprobs.ts';
import type { SampleRequest, SampleResult, SamplingParams, TokenSampler, Tokenizer } from '../contracts/index.ts';
import { ENGINE_PROTOCOLS } from './engine-protocols.ts';
import { UPDATE_WEIGHTS_PATH, UpdateWeightsRequest } from './engine-weights.ts';
import { checkBearer, checkJsonContentType, checkOrigin, hostChecker, HttpError, readJsonBody } from './http-guard.ts';
import { completions } from './openai-completions.ts';

export interface SamplerServer {
  /** http://host:port, with the port actually bound (port 0 picks a free one). */
  url: string;
  close(): Promise<void>;
}

interface Pending {
  request: SampleRequest;
  params: SamplingParams;
  resolve(r: SampleResult): void;
  reject(e: Error): void;
}

/** Bounds that keep one client from starving the others (docs/decisions/0013). */
export interface ServerLimits {
  /** Largest body of a sampling request. */
  bodyBytes: number;
  /** Largest body of the admin endpoint (a JSON object with one path). */
  adminBodyBytes: number;
  /** POST requests being read or served at once; more get 503 with Retry-After. */
  concurrent: number;
}

export const DEFAULT_LIMITS: ServerLimits = { bodyBytes: 1 << 20, adminBodyBytes: 16 << 10, concurrent: 32 };

export interface SamplerServerOptions {
  sampler: TokenSampler;
  tokenizer: Tokenizer;
  vocabSize: number;
  /** The model's maxSeqLen: prompt + max_tokens may not exceed it. */
  maxModelLen: number;
  host?: string;
  port?: number;
  model?: string;
  /** Top-k teacher-forced log-probs (the embedded model), for logprobs > 0 and echo. */
  score?: (seq: readonly number[], from: number, k: number) => PositionLogprobs[];
  /**
   * SGLang's update_weights_from_disk, behind a bearer token; absent: the endpoint answers 403
   * (disabled). loadWeights validates and swaps, or throws with a message safe to show.
   */
  admin?: { token: string; loadWeights: (path: string) => Promise<string> };
  /** Host names accepted besides the bound address and localhost (DNS rebinding guard). */
  allowHosts?: readonly string[];
  limits?: Partial<ServerLimits>;
  log?: (line: string) => void;
}

type Route = {
  post: boolean;
  admin?: boolean;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void> | void;
};

/** OpenAI error types by status (the `type` of `{ error: { message, type, param, code } }`). */
const ERROR_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  403: 'PermissionDeniedError',
  404: 'NotFoundError',
  413: 'RequestTooLargeError',
  415: 'UnsupportedMediaTypeError',
  429: 'RateLimitError',
  503: 'ServiceUnavailableError',
};

/**
 * Serves a TokenSampler over the vLLM (OpenAI /v1/completions) and SGLang (/generate) APIs, plus
 * SGLang's /update_weights_from_disk for a trainer that publishes weights. Requests that arrive
 * while the model is busy are batched into one sample() call per (temperature, top-p), as a
 * continuous-batching engine would. Every request is checked before its body is read: Host
 * (DNS rebinding), Origin (web pages), Content-Type, the admin token, body size and concurrency.
 */
export async function startSamplerServer(options: SamplerServerOptions): Promise<SamplerServer> {
  const { sampler } = options;
  const model = options.model ?? 'default';
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  let queue: Pending[] = [];
  let scheduled = false;
  let inFlight = 0;
  let loading = false;
  const startedAt = Math.floor(Date.now() / 1000);

  async function flush(): Promise<void> {
    scheduled = false;
    const batch = queue;
    queue = [];
    const groups = new Map<string, Pending[]>();
    for (const p of batch) {
      const key = `${p.params.temperature}/${p.params.topP}`;
      const group = groups.get(key);
      if (group) group.push(p);
      else groups.set(key, [p]);
    }
    for (const group of groups.values()) {
      try {
        const results = await sampler.sample(
          group.map((p) => p.request),
          group[0]!.params,
        );
        group.forEach((p, i) => p.resolve(results[i]!));
      } catch {
        // One bad request must not fail its batch-mates: run each alone to find whose it was.
        for (const p of group)
          await sampler.sample([p.request], p.params).then(
            (r) => p.resolve(r[0]!),
            (e: Error) => p.reject(e),
          );
      }
    }
  }

  function sampleBatch(requests: readonly SampleRequest[], params: SamplingParams): Promise<SampleResult[]> {
    return Promise.all(
      requests.map(
        (request) =>
          new Promise<SampleResult>((resolve, reject) => {
            queue.push({ request, params, resolve, reject });
            if (!scheduled) {
              scheduled = true;
              setImmediate(() => void flush());
            }
          }),
      ),
    ).catch((e: Error) => {
      throw new HttpError(400, e.message);
    });
  }

  const sglang = ENGINE_PROTOCOLS.sglang;
  const routes: Record<string, Route> = {
    'GET /health': { post: false, handle: (_req, res) => send(res, 200, { status: 'ok' }) },
    'GET /v1/models': {
      post: false,
      handle: (_req, res) =>
        send(res, 200, {
          object: 'list',
          data: [
            {
              id: model,
              object: 'model',
              created: startedAt,
              owned_by: 'crl',
              root: model,
              parent: null,
              max_model_len: options.maxModelLen,
            },
          ],
        }),
    },
    'POST /v1/completions': {
      post: true,
      handle: async (req, res) => {
        const answer = await completions(await readJsonBody(req, limits.bodyBytes), {
          model,
          tokenizer: options.tokenizer,
          vocabSize: options.vocabSize,
          maxModelLen: options.maxModelLen,
          sample: sampleBatch,
          ...(options.score ? { score: options.score } : {}),
        });
        if ('json' in answer) return send(res, 200, answer.json);
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const e of answer.events) res.write(e);
        res.end();
      },
    },
    [`POST ${sglang.path}`]: {
      post: true,
      handle: async (req, res) => {
        let parsed: ReturnType<NonNullable<typeof sglang.parseRequest>>;
        try {
          parsed = sglang.parseRequest!(await readJsonBody(req, limits.bodyBytes));
        } catch (e) {
          if (e instanceof HttpError) throw e;
          throw new HttpError(400, (e as Error).message);
        }
        const v = options.vocabSize;
        if ([...parsed.request.prompt, ...parsed.request.stopTokens].some((t) => t >= v))
          throw new HttpError(400, `token ids must be below the vocabulary size ${v}`);
        const [result] = await sampleBatch([parsed.request], parsed.params);
        send(res, 200, sglang.responseBody!({ result: result!, model, promptTokens: parsed.request.prompt.length }));
      },
    },
    [`POST ${UPDATE_WEIGHTS_PATH}`]: {
      post: true,
      admin: true,
      handle: async (req, res) => {
        const r = UpdateWeightsRequest.safeParse(await readJsonBody(req, limits.adminBodyBytes));
        if (!r.success) throw new HttpError(400, `model_path: ${r.error.issues[0]!.message}`);
        if (loading) throw new HttpError(429, 'a weight update is already running; retry when it has finished');
        loading = true;
        try {
          // The swap itself is synchronous, so it never lands inside a generation; on any failure
          // the served weights stay as they were.
          const message = await options.admin!.loadWeights(r.data.model_path);
          options.log?.(`crl serve: ${message}`);
          send(res, 200, { success: true, message });
        } catch (e) {
          options.log?.(`crl serve: refused a weight update: ${(e as Error).message}`);
          throw e instanceof HttpError ? e : new HttpError(400, (e as Error).message);
        } finally {
          loading = false;
        }
      },
    },
  };
  const server = createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      const err = e instanceof HttpError ? e : new HttpError(500, 'internal error');
      if (!(e instanceof HttpError)) options.log?.(`crl serve: internal error: ${(e as Error).stack ?? String(e)}`);
      const admin = req.url?.startsWith(UPDATE_WEIGHTS_PATH) === true;
      sendError(res, err, admin);
    });
  });
  let hostOk: (h?: string) => boolean = () => false;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const route = routes[`${req.method} ${path}`];
    if (!hostOk(req.headers.host))
      throw new HttpError(
        403,
        'the Host header does not name this server (start crl serve with --allow-host NAME to accept one)',
      );
    checkOrigin(req);
    if (!route) throw new HttpError(404, `no route ${req.method} ${path}; routes: ${Object.keys(routes).join(', ')}`);
    if (!route.post) return route.handle(req, res);
    if (route.admin) {
      if (!options.admin)
        throw new HttpError(
          403,
          'weight loading is disabled; start crl serve with --admin-token (and --weights-dir) to enable it',
        );
      checkBearer(req, options.admin.token);
    }
    checkJsonContentType(req);
    const limit = route.admin ? limits.adminBodyBytes : limits.bodyBytes;
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit)
      throw new HttpError(413, `request body of ${declared} bytes is over this endpoint's limit of ${limit} bytes`);
    if (inFlight >= limits.concurrent)
      throw new HttpError(503, `busy: ${limits.concurrent} requests in progress; retry shortly`, {
        'retry-after': '1',
      });
    inFlight++;
    res.once('close', () => inFlight--);
    await route.handle(req, res);
  }

  server.requestTimeout = 120_000;
  server.headersTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  hostOk = hostChecker({ host: options.host ?? '127.0.0.1', port: addr.port, allow: options.allowHosts ?? [] });
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * Errors in the OpenAI shape (`{ error: { message, type, param, code } }`); the admin endpoint
 * answers SGLang's `{ success: false, message }`. A refused request's body may still be arriving:
 * it is read and discarded first (never kept), so the client, still sending, gets the answer;
 * past DRAIN_CAP bytes the answer goes out at once and the connection is cut.
 */
const DRAIN_CAP = 16 << 20;

function sendError(res: ServerResponse, err: HttpError, admin: boolean): void {
  const body = admin
    ? { success: false, message: err.message }
    : {
        error: {
          message: err.message,
          type: ERROR_TYPES[err.status] ?? 'InternalServerError',
          param: null,
          code: err.status,
        },
      };
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
