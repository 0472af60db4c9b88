import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import type { SampleRequest } from '../contracts/index.ts';
import { Rng } from '../util/random.ts';
import { ENGINE_PROTOCOLS } from './engine-protocols.ts';
import { createHttpSampler, EngineError } from './http-sampler.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CRL = join(ROOT, 'bin', 'crl');
const tokenizer = new WordTokenizer();
const eot = tokenizer.specialId('<eot>');

/** `crl serve` as a real child process; resolves with its ready line. */
function serve(dir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(CRL, ['serve', '--policy', dir, '--port', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`crl serve exited with ${code}`)));
    createInterface({ input: child.stdout }).once('line', (line) => resolve({ child, url: JSON.parse(line).url }));
  });
}

describe('remote engine adapter: HTTP sampler against a real `crl serve` process', () => {
  let dir: string;
  let server: { child: ChildProcess; url: string };
  let local: PolicyModel;

  beforeAll(async () => {
    dir = join(mkdtempSync(join(tmpdir(), 'crl-serve-')), 'ckpt');
    await saveCheckpoint(dir, {
      policy: new PolicyModel({
        config: modelConfig('tiny', { vocabSize: tokenizer.vocabSize, maxSeqLen: 256 }),
        optim: DEFAULT_OPTIMIZER,
        rng: new Rng(7),
      }),
    });
    local = (await loadCheckpoint(dir)).policy;
    server = await serve(dir);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
  afterAll(() => {
    server?.child.kill('SIGTERM');
  });

  for (const protocol of ['vllm', 'sglang'] as const) {
    it(`${protocol}: a batch comes back token-exact, with the model's own logprobs, stopping where asked`, async () => {
      const sampler = createHttpSampler({ url: server.url, protocol });
      const prompts = [
        '<bos> <sys> you are an agent <eot>',
        '<bos> <user> read all , then answer <eot> <asst>',
        '<bos> <obs> set a 1 <eot>',
      ].map((t) => tokenizer.encode(t));
      // Most tokens are stop tokens in the second request, so it stops early; the others run to length.
      const everyOther = Array.from({ length: tokenizer.vocabSize }, (_, i) => i).filter((i) => i % 2 === 0);
      const requests: SampleRequest[] = prompts.map((prompt, i) => ({
        prompt,
        maxTokens: 6,
        stopTokens: i === 1 ? everyOther : [eot],
      }));
      const results = await sampler.sample(requests, { temperature: 1, topP: 1 });
      expect(results).toHaveLength(3);
      const stopped = results[1]!;
      expect(stopped.finishReason).toBe('stop');
      expect(everyOther).toContain(stopped.tokens[stopped.tokens.length - 1]);
      for (const [i, r] of results.entries()) {
        expect(r.tokens.length).toBeGreaterThan(0);
        expect(r.tokens.length).toBeLessThanOrEqual(6);
        expect(r.logprobs).toHaveLength(r.tokens.length);
        if (r.finishReason === 'length') expect(r.tokens).toHaveLength(6);
        // Teacher-forced logprobs of the same checkpoint in this process: what the server sampled under.
        const seq = Int32Array.from([...prompts[i]!, ...r.tokens]);
        const lp = local.forward([seq]).logprobs[0]!;
        r.tokens.forEach((_, t) => expect(r.logprobs[t]!).toBeCloseTo(lp[prompts[i]!.length + t]!, 4));
      }
    }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
  }

  for (const protocol of ['vllm', 'sglang'] as const) {
    it(`${protocol}: with a sampler seed, an episode's tokens do not depend on what the server batched with it`, async () => {
      const sampler = createHttpSampler({ url: server.url, protocol, seed: 5 });
      const prompt = tokenizer.encode('<bos> <obs> set a 1 <eot>');
      const ask = (episodeId: string): SampleRequest => ({ prompt, maxTokens: 12, stopTokens: [], episodeId });
      const params = { temperature: 1, topP: 1 };
      const [alone] = await sampler.sample([ask('ep-0')], params);
      // Sent at once, the six reach the server's batcher together; ep-0 is fourth.
      const batched = await sampler.sample(['ep-1', 'ep-2', 'ep-3', 'ep-0', 'ep-4', 'ep-5'].map(ask), params);
      expect(batched[3]!.tokens).toEqual(alone!.tokens);
      expect(new Set(batched.map((r) => r.tokens.join(','))).size).toBe(6); // each episode its own draws
    }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
  }

  it("/v1/completions: n choices with a seed are the seed's and its successors' draws (vLLM's seed + index)", async () => {
    const complete = async (body: object) => {
      const r = await fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: tokenizer.encode('<bos> <obs> set a 1 <eot>'), max_tokens: 10, ...body }),
      });
      expect(r.status).toBe(200);
      return ((await r.json()) as { choices: { text: string }[] }).choices.map((c) => c.text);
    };
    const [pair, first, second, again] = await Promise.all([
      complete({ n: 2, seed: 41 }),
      complete({ seed: 41 }),
      complete({ seed: 42 }),
      complete({ seed: 41 }),
    ]);
    expect(pair).toEqual([...first, ...second]);
    expect(again).toEqual(first);
    expect(first).not.toEqual(second);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('crl run --policy sglang:URL runs episodes through the server and records sampler logprobs', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-run-remote-')), 'eps.jsonl');
    const r = spawnSync(
      CRL,
      [
        'run',
        '--env',
        'kv-ledger',
        '--policy',
        `sglang:${server.url}`,
        '--episodes',
        '2',
        '--windows',
        '2',
        '--out',
        out,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!).episodes).toBe(2);
    const records = readRecordsFile(out);
    const generated = records.flatMap((rec) =>
      rec.segments.flatMap((s) => s.logprobs.filter((_, t) => s.lossMask[t] === 1)),
    );
    expect(generated.length).toBeGreaterThan(0);
    expect(generated.every((x) => typeof x === 'number' && x <= 0)).toBe(true);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('crl eval --policy vllm:URL evaluates through the server', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-eval-remote-')), 'eval.json');
    const r = spawnSync(
      CRL,
      [
        'eval',
        '--policy',
        `vllm:${server.url}`,
        '--env',
        'chunk-sum',
        '--tasks',
        '2',
        '--samples',
        '4',
        '--windows',
        '1,4',
        '--out',
        out,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(readFileSync(out, 'utf8'));
    expect(result.policy).toBe(`vllm:${server.url}`);
    expect(Object.keys(result.modes).sort()).toEqual(['x1', 'x4']);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one

  it('a request the server refuses is an EngineError with its reason', async () => {
    const sampler = createHttpSampler({ url: server.url, protocol: 'vllm' });
    await expect(
      sampler.sample([{ prompt: [1, 9999], maxTokens: 2, stopTokens: [] }], { temperature: 1, topP: 1 }),
    ).rejects.toThrow(/HTTP 400.*vocabulary size/);
  });
});

/** A real HTTP server in this process that answers every request with one status, counting hits. */
async function fixedStatusServer(
  status: number,
): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const s = createHttpServer((_req, res) => {
    hits++;
    res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":{"message":"nope"}}');
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(s.address() as { port: number }).port}`,
    hits: () => hits,
    close: () => new Promise((r) => s.close(() => r())),
  };
}

describe('HTTP sampler without a server', () => {
  it('retries 5xx answers and network errors, never 4xx', async () => {
    for (const [status, expected] of [
      [503, 3],
      [400, 1],
    ] as const) {
      const srv = await fixedStatusServer(status);
      const sampler = createHttpSampler({ url: srv.url, protocol: 'vllm', retries: 2 });
      await expect(
        sampler.sample([{ prompt: [1], maxTokens: 1, stopTokens: [] }], { temperature: 1, topP: 1 }),
      ).rejects.toThrow(new RegExp(`HTTP ${status}: .*nope`));
      expect(srv.hits()).toBe(expected);
      await srv.close();
    }
  });

  it('an unreachable engine fails after its retries with the URL in the message', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p)); // a port that was free a moment ago: nothing listens there now
      });
    });
    const sampler = createHttpSampler({ url: `http://127.0.0.1:${port}`, protocol: 'sglang', retries: 1 });
    const err = await sampler
      .sample([{ prompt: [1], maxTokens: 1, stopTokens: [] }], { temperature: 1, topP: 1 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(String(err.message)).toContain(`127.0.0.1:${port}/generate`);
    expect(String(err.message)).toMatch(/cannot reach the engine.*is it running/);
    // From the CLI: a user-facing error, exit code 2, no stack trace.
    const r = spawnSync(
      CRL,
      [
        'run',
        '--env',
        'kv-ledger',
        '--policy',
        `vllm:http://127.0.0.1:${port}`,
        '--episodes',
        '1',
        '--out',
        join(mkdtempSync(join(tmpdir(), 'crl-down-')), 'x.jsonl'),
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/crl: error: .*cannot reach the engine/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(() => createHttpSampler({ url: 'not a url', protocol: 'vllm' })).toThrow(/not a URL/);
    expect(() => createHttpSampler({ url: 'http://x', protocol: 'tgi' as never })).toThrow(/valid: vllm, sglang/);
  });

  it('puts back a stop token an engine reported but left out of the tokens (its logprob unknown)', () => {
    const request: SampleRequest = { prompt: [1], maxTokens: 8, stopTokens: [5] };
    const v = ENGINE_PROTOCOLS.vllm.parseResponse(
      {
        choices: [
          { finish_reason: 'stop', stop_reason: 5, logprobs: { tokens: ['token_id:3'], token_logprobs: [-0.5] } },
        ],
      },
      request,
    );
    expect(v).toEqual({ tokens: [3, 5], logprobs: [-0.5, null], finishReason: 'stop' });
    const kept = ENGINE_PROTOCOLS.vllm.parseResponse(
      {
        choices: [
          {
            finish_reason: 'stop',
            stop_reason: 5,
            logprobs: { tokens: ['token_id:3', 'token_id:5'], token_logprobs: [-0.5, -0.1] },
          },
        ],
      },
      request,
    );
    expect(kept.tokens).toEqual([3, 5]);
    const s = ENGINE_PROTOCOLS.sglang.parseResponse(
      { meta_info: { output_token_logprobs: [[-0.25, 4, 'x']], finish_reason: { type: 'stop', matched: 5 } } },
      request,
    );
    expect(s).toEqual({ tokens: [4, 5], logprobs: [-0.25, null], finishReason: 'stop' });
    const len = ENGINE_PROTOCOLS.sglang.parseResponse(
      { meta_info: { output_token_logprobs: [[-0.25, 4, null]], finish_reason: { type: 'length', length: 1 } } },
      request,
    );
    expect(len).toEqual({ tokens: [4], logprobs: [-0.25], finishReason: 'length' });
    expect(() =>
      ENGINE_PROTOCOLS.vllm.parseResponse(
        { choices: [{ finish_reason: 'length', logprobs: { tokens: ['hello'], token_logprobs: [-1] } }] },
        request,
      ),
    ).toThrow(/token_id:N/);
    expect(() => ENGINE_PROTOCOLS.sglang.parseResponse({ text: 'hi' }, request)).toThrow(/meta_info/);
  });
});
