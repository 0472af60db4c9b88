import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from '../rollout/types.ts';
import { ENGINE_PROTOCOLS, type EngineProtocol } from './engine-protocols.ts';
import { UPDATE_WEIGHTS_PATH, UpdateWeightsRequest } from './engine-weights.ts';

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

const MAX_BODY_BYTES = 8 << 20;

/**
 * Serves a TokenSampler over the vLLM and SGLang token-in/token-out APIs (engine-protocols.ts), so
 * the embedded model can sample in another process or on another machine, and so the HTTP sampler
 * is tested against a real server. Requests that arrive while the model is busy are batched into
 * one sample() call per (temperature, top-p), as a continuous-batching engine would.
 */
export async function startSamplerServer(options: {
  sampler: TokenSampler;
  host?: string;
  port?: number;
  model?: string;
  vocabSize?: number;
  /** Loads new weights from a checkpoint directory (SGLang's update_weights_from_disk); absent: 404. */
  loadWeights?: (path: string) => Promise<void>;
}): Promise<SamplerServer> {
  const { sampler } = options;
  const model = options.model ?? 'default';
  let queue: Pending[] = [];
  let scheduled = false;

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

  function enqueue(request: SampleRequest, params: SamplingParams): Promise<SampleResult> {
    return new Promise((resolve, reject) => {
      queue.push({ request, params, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => void flush());
      }
    });
  }

  async function handleSample(protocol: EngineProtocol, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    let parsed: ReturnType<EngineProtocol['parseRequest']>;
    try {
      parsed = protocol.parseRequest(body);
    } catch (e) {
      return send(res, 400, { error: { message: (e as Error).message } });
    }
    const v = options.vocabSize;
    const bad =
      v === undefined ? -1 : [...parsed.request.prompt, ...parsed.request.stopTokens].findIndex((t) => t >= v);
    if (bad >= 0) return send(res, 400, { error: { message: `token ids must be below the vocabulary size ${v}` } });
    try {
      const result = await enqueue(parsed.request, parsed.params);
      send(res, 200, protocol.responseBody({ result, model, promptTokens: parsed.request.prompt.length }));
    } catch (e) {
      send(res, 400, { error: { message: (e as Error).message } });
    }
  }

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void> | void> = {
    'GET /health': (_req, res) => send(res, 200, { status: 'ok' }),
    'GET /v1/models': (_req, res) => send(res, 200, { object: 'list', data: [{ id: model, object: 'model' }] }),
  };
  for (const p of Object.values(ENGINE_PROTOCOLS)) routes[`POST ${p.path}`] = (req, res) => handleSample(p, req, res);
  const { loadWeights } = options;
  if (loadWeights) {
    routes[`POST ${UPDATE_WEIGHTS_PATH}`] = async (req, res) => {
      const r = UpdateWeightsRequest.safeParse(await readJson(req));
      if (!r.success) return send(res, 400, { success: false, message: `model_path: ${r.error.issues[0]!.message}` });
      try {
        // Sampling is synchronous inside sample(), so this swap never lands mid-generation.
        await loadWeights(r.data.model_path);
        send(res, 200, { success: true, message: `loaded ${r.data.model_path}` });
      } catch (e) {
        send(res, 400, { success: false, message: (e as Error).message });
      }
    };
  }

  const server = createServer((req, res) => {
    const route = routes[`${req.method} ${new URL(req.url ?? '/', 'http://x').pathname}`];
    if (!route)
      return send(res, 404, {
        error: { message: `no route ${req.method} ${req.url}; routes: ${Object.keys(routes).join(', ')}` },
      });
    Promise.resolve(route(req, res)).catch((e: Error) =>
      send(res, e instanceof BadRequest ? 400 : 500, { error: { message: e.message } }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

class BadRequest extends Error {}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(`request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(c as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('request body is not JSON');
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
