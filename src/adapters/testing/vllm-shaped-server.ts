/**
 * A test engine shaped as vLLM's OpenAI-compatible server answers (`vllm serve`; tests only), run
 * as its own process by vllm-shaped.ts: where vLLM itself cannot run, the engine pool's rules
 * about servers that are not `crl serve` are tested against this. What it shares with vLLM:
 * - `POST /v1/completions` with token ids as `prompt`, `max_tokens`, `stop_token_ids`, `logprobs`
 *   and `return_tokens_as_token_ids` answers the OpenAI completion shape, tokens as `token_id:N`,
 *   `finish_reason` "stop" with the matched id in `stop_reason` or "length";
 * - no weight version anywhere: vLLM has no `GET /get_weight_version` and puts none in its answers;
 *   an unknown route is FastAPI's 404 `{"detail":"Not Found"}`;
 * - errors as vLLM's `ErrorResponse` (`{"object":"error","message",...,"code"}`);
 * - `GET /health` (200, empty), `GET /v1/models`, and uvicorn's access-log line per request on stdout.
 * Sampled tokens are uniform over `--vocab` ids (no model). `--fail N` answers the first N
 * completions with HTTP 500 (an engine error that is not "busy") before it serves.
 * Usage: node --import tsx vllm-shaped-server.ts [--vocab V] [--fail N]; prints {"url": ...} when ready.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const VOCAB = flag('--vocab', 64);
let failuresLeft = flag('--fail', 0);
const MODEL = 'vllm-shaped';
let seed = 12345;
const nextToken = (): number => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % VOCAB;
};

function send(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, text?: string): void {
  const payload = text ?? JSON.stringify(body);
  res.writeHead(status, { 'content-type': text === undefined ? 'application/json' : 'text/plain' }).end(payload);
  const reason = { 200: 'OK', 400: 'Bad Request', 404: 'Not Found', 500: 'Internal Server Error' }[status] ?? '';
  const peer = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
  process.stdout.write(`INFO:     ${peer} - "${req.method} ${req.url} HTTP/1.1" ${status} ${reason}\n`);
}

const error = (message: string, type: string, code: number) => ({ object: 'error', message, type, param: null, code });

function complete(body: Record<string, unknown>): unknown {
  const prompt = body.prompt as number[];
  const maxTokens = Number(body.max_tokens ?? 16);
  const stops = new Set((body.stop_token_ids as number[] | undefined) ?? []);
  const tokens: number[] = [];
  let stopReason: number | null = null;
  while (tokens.length < maxTokens) {
    const t = nextToken();
    tokens.push(t);
    if (stops.has(t)) {
      stopReason = t;
      break;
    }
  }
  // The matched stop token stays in the logprobs' tokens (its text would not be in `text`).
  const out = tokens;
  const lp = -Math.log(VOCAB);
  return {
    id: `cmpl-${Date.now().toString(16)}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: MODEL,
    choices: [
      {
        index: 0,
        text: '',
        logprobs: {
          text_offset: out.map(() => 0),
          token_logprobs: out.map(() => lp),
          tokens: out.map((t) => `token_id:${t}`),
          top_logprobs: out.map((t) => ({ [`token_id:${t}`]: lp })),
        },
        finish_reason: stopReason === null ? 'length' : 'stop',
        stop_reason: stopReason,
        prompt_logprobs: null,
      },
    ],
    usage: { prompt_tokens: prompt.length, total_tokens: prompt.length + out.length, completion_tokens: out.length },
  };
}

const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (d: Buffer) => (raw += d.toString()));
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/health') return send(req, res, 200, null, '');
    if (req.method === 'GET' && req.url === '/v1/models')
      return send(req, res, 200, {
        object: 'list',
        data: [{ id: MODEL, object: 'model', created: 0, owned_by: 'vllm', root: MODEL, parent: null }],
      });
    if (req.method !== 'POST' || req.url !== '/v1/completions') return send(req, res, 404, { detail: 'Not Found' });
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return send(req, res, 400, error('request body is not JSON', 'BadRequestError', 400));
    }
    if (!Array.isArray(body.prompt) || !body.prompt.every((t) => Number.isInteger(t) && t >= 0 && t < VOCAB))
      return send(req, res, 400, error(`prompt: token ids below ${VOCAB} expected`, 'BadRequestError', 400));
    if (failuresLeft > 0) {
      failuresLeft--;
      return send(req, res, 500, error('EngineCore encountered an issue', 'InternalServerError', 500));
    }
    send(req, res, 200, complete(body));
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}` }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
