import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadCheckpoint, saveCheckpoint } from '../../model/formats/checkpoint.ts';
import { modelConfig, type ModelConfig } from '../../model/network/config.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { DEFAULT_OPTIMIZER } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';

/** Test helpers for a real `crl serve` process (tests only). */
const CRL = join(new URL('../../..', import.meta.url).pathname, 'bin', 'crl');

export interface Served {
  child: ChildProcess;
  url: string;
  port: number;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  stop(): void;
}

/** Starts `crl serve ARGS --port PORT` (default 0: any free port) and resolves with its ready line's URL. */
export function startServe(args: readonly string[], env: NodeJS.ProcessEnv = process.env, port = 0): Promise<Served> {
  const child = spawn(CRL, ['serve', ...args, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`crl serve exited with ${code}: ${err}`)));
    createInterface({ input: child.stdout }).once('line', (line) => {
      const url = (JSON.parse(line) as { url: string }).url;
      resolve({ child, url, port: Number(new URL(url).port), stderr: () => err, stop: () => child.kill('SIGTERM') });
    });
  });
}

/** A tiny random policy checkpoint in the word tokenizer's vocabulary; params can be overwritten. */
export async function tinyCheckpoint(
  dir: string,
  options: { seed: number; fill?: number; config?: Partial<ModelConfig> },
): Promise<PolicyModel> {
  const { tokenizer } = loadTokenizer('word');
  const policy = new PolicyModel({
    config: modelConfig('tiny', { vocabSize: tokenizer.vocabSize, maxSeqLen: 256, ...options.config }),
    optim: DEFAULT_OPTIMIZER,
    rng: new Rng(options.seed),
  });
  if (options.fill !== undefined) policy.net.params.fill(options.fill);
  await saveCheckpoint(dir, { policy });
  return options.fill === undefined ? (await loadCheckpoint(dir)).policy : policy;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One HTTP request with exactly the headers given (fetch would refuse to set Host or Origin).
 * Resolves with the answer even when the server cuts the connection after answering (a refused
 * large body). `slow: true` sends the headers and a first piece of a chunked body, never the rest;
 * `abort()` ends it.
 */
export function rawRequest(options: {
  port: number;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  slow?: boolean;
}): { response: Promise<RawResponse>; abort(): void } {
  let abort = () => {};
  const response = new Promise<RawResponse>((resolve, reject) => {
    let answered: RawResponse | null = null;
    const req = request(
      { host: '127.0.0.1', port: options.port, method: options.method, path: options.path, headers: options.headers },
      (res) => {
        answered = { status: res.statusCode ?? 0, headers: res.headers, body: '' };
        res.on('data', (d: Buffer) => (answered!.body += d.toString()));
        res.on('end', () => resolve(answered!));
        res.on('error', () => resolve(answered!));
      },
    );
    abort = () => req.destroy();
    req.on('error', (e) => (answered ? resolve(answered) : reject(e)));
    if (options.slow) {
      req.write('{"prompt": [1');
      req.flushHeaders();
    } else req.end(options.body);
  });
  return { response, abort: () => abort() };
}
