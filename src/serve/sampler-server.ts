import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UPDATE_WEIGHTS_PATH } from '../adapters/engine-weights.ts';
import type { PositionLogprobs, ScoreSampling } from '../model/sampler/top-logprobs.ts';
import type { SampleRequest, SamplingParams, TokenSampler, Tokenizer } from '../contracts/index.ts';
import { sendError, sendErrorAndClose } from './http-errors.ts';
import { checkJsonContentType, checkOrigin, hostChecker, HttpError } from './http-guard.ts';
import type { ChatTemplateSource } from '../rollout/chat-format.ts';
import { openaiRoutes } from './openai-routes.ts';
import { RequestBatcher } from './request-batcher.ts';
import { DEFAULT_LIMITS, RequestSlots, startBodyDeadline, type ServerLimits } from './request-slots.ts';
import type { ServedAdapters } from './lora-adapters.ts';
import { loraRoutes } from './lora-routes.ts';
import { healthRoutes, weightVersionRoutes, type Route, type SamplingContext } from './route.ts';
import { sglangRoutes } from './sglang-routes.ts';
import { checkAdmin, weightAdminRoute, type WeightAdmin } from './weight-admin.ts';

export { DEFAULT_LIMITS, type ServerLimits } from './request-slots.ts';

export interface SamplerServer {
  /** http://host:port, with the port actually bound (port 0 picks a free one). */
  url: string;
  close(): Promise<void>;
}

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
  score?: (seq: readonly number[], from: number, k: number, sampling?: ScoreSampling) => PositionLogprobs[];
  /** The tokenizer's chat template: /v1/chat/completions renders messages and tools with it. */
  chat?: ChatTemplateSource;
  /**
   * SGLang's update_weights_from_disk, behind a bearer token; absent: the endpoint answers 403
   * (disabled). loadWeights validates and swaps, or throws with a message safe to show.
   */
  admin?: WeightAdmin;
  /**
   * LoRA adapters served by name beside the model (lora-adapters.ts), loaded through vLLM's
   * /v1/load_lora_adapter from `roots` behind the admin token; absent: those routes answer 403.
   */
  lora?: { adapters: ServedAdapters; roots: readonly string[] };
  /** Host names accepted besides the bound address and localhost (DNS rebinding guard). */
  allowHosts?: readonly string[];
  limits?: Partial<ServerLimits>;
  /** The label of the weights served at start (SGLang's --weight-version, default 'default'). */
  weightVersion?: string;
  log?: (line: string) => void;
}

/**
 * Serves a TokenSampler over the vLLM (OpenAI /v1/completions) and SGLang (/generate) APIs, plus
 * SGLang's /update_weights_from_disk for a trainer that publishes weights and vLLM's runtime LoRA
 * API for one that pushes adapters (lora-routes.ts); requests are batched per served model
 * (request-batcher.ts). Every request is checked before its body is read: Host (DNS rebinding),
 * Origin (web pages), the admin token, Content-Type and body size; its body must arrive within
 * the body deadline, and only then does it take a serving slot (request-slots.ts,
 * docs/decisions/0029), so slow or idle clients cannot starve the others.
 */
export async function startSamplerServer(options: SamplerServerOptions): Promise<SamplerServer> {
  const model = options.model ?? 'default';
  const limits: ServerLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const slots = new RequestSlots(limits);
  let weightVersion = options.weightVersion ?? 'default';
  // Every result says which weights sampled it: the label is read as the batch starts, and a
  // weight swap is synchronous, so it never lands inside a batch (weight-admin.ts).
  const batcher = new RequestBatcher({
    sample: async (requests, params, adapter) => {
      const version = weightVersion;
      const results = adapter
        ? await options.lora!.adapters.sample(adapter, requests, params)
        : await options.sampler.sample(requests, params);
      return results.map((r) => ({ ...r, weightVersion: version }));
    },
  });
  const ctx: SamplingContext = {
    model,
    tokenizer: options.tokenizer,
    vocabSize: options.vocabSize,
    maxModelLen: options.maxModelLen,
    ...(options.lora ? { adapters: options.lora.adapters } : {}),
    sample: (requests: readonly SampleRequest[], params: SamplingParams, adapter?: string) =>
      batcher.sample(requests, params, adapter).catch((e: Error) => {
        throw e instanceof HttpError ? e : new HttpError(400, e.message); // an adapter unloaded meanwhile: 404
      }),
    ...(options.score
      ? {
          score: (seq, from, k, sampling, adapter) =>
            adapter
              ? options.lora!.adapters.score(adapter, seq, from, k, sampling)
              : options.score!(seq, from, k, sampling),
        }
      : {}),
    ...(options.chat ? { chat: options.chat } : {}),
  };
  const routes: Record<string, Route> = {
    ...healthRoutes,
    ...weightVersionRoutes({ model, weightVersion: () => weightVersion }),
    ...openaiRoutes({
      ...ctx,
      startedAt: Math.floor(Date.now() / 1000),
      ...(options.lora ? { listAdapters: () => options.lora!.adapters.list() } : {}),
    }),
    ...sglangRoutes(ctx),
    [`POST ${UPDATE_WEIGHTS_PATH}`]: weightAdminRoute({
      admin: options.admin,
      onLoaded: (v) => {
        if (v !== undefined) weightVersion = v;
        options.lora?.adapters.baseChanged(); // adapters go on the new base from their next batch
      },
      ...(options.log ? { log: options.log } : {}),
    }),
    ...loraRoutes({
      adapters: options.lora?.adapters,
      roots: options.lora?.roots ?? [],
      model,
      ...(options.log ? { log: options.log } : {}),
    }),
  };
  const isAdmin = (req: IncomingMessage) => req.url?.startsWith(UPDATE_WEIGHTS_PATH) === true;
  const server = createServer((req, res) => {
    startBodyDeadline({
      req,
      res,
      ms: limits.bodyTimeoutMs,
      expire: () =>
        sendErrorAndClose(
          res,
          new HttpError(408, `the request body did not arrive within ${limits.bodyTimeoutMs} ms; send it at once`),
          isAdmin(req),
        ),
    });
    void handle(req, res).catch((e: unknown) => {
      const err = e instanceof HttpError ? e : new HttpError(500, 'internal error');
      if (!(e instanceof HttpError)) options.log?.(`crl serve: internal error: ${(e as Error).stack ?? String(e)}`);
      sendError(res, err, isAdmin(req));
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
    if (!route.post) return route.handle(res, undefined);
    if (route.admin) checkAdmin(req, options.admin);
    checkJsonContentType(req);
    const limit = route.admin ? limits.adminBodyBytes : limits.bodyBytes;
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit)
      throw new HttpError(413, `request body of ${declared} bytes is over this endpoint's limit of ${limit} bytes`);
    const body = await slots.readBody(req, res, limit);
    slots.serve(res); // only now: a client still sending its body holds no serving slot
    await route.handle(res, body);
  }

  server.headersTimeout = 30_000;
  // Node's own bound on receiving a request, past the body deadline (which answers 408 first).
  server.requestTimeout = Math.max(120_000, server.headersTimeout + limits.bodyTimeoutMs + 1_000);
  server.maxConnections = limits.connections;
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
