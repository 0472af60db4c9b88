import { mkdtempSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';

/**
 * Slow and idle clients against a real `crl serve` process (docs/decisions/0029): a request takes
 * a serving slot only once its body has arrived, and a body must arrive within the body deadline.
 */
const { tokenizer } = loadTokenizer('word');
const PROMPT = tokenizer.encode('<bos> <sys> you are an agent <eot> <user>');

/** Waits for a condition that comes on its own schedule; fails naming it after `ms`. */
async function until(ok: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface RawClient {
  socket: Socket;
  received(): string;
  closed(): boolean;
  write(data: string): Promise<void>;
}

async function rawClient(port: number): Promise<RawClient> {
  const socket = connect({ host: '127.0.0.1', port });
  let received = '';
  let closed = false;
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('close', () => (closed = true));
  socket.on('error', () => {}); // a reset after the server hangs up is expected
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    received: () => received,
    closed: () => closed,
    write: (data) => new Promise<void>((resolve, reject) => socket.write(data, (e) => (e ? reject(e) : resolve()))),
  };
}

/** Request headers for a POST /v1/completions declaring a `length`-byte body. */
const postHead = (port: number, length: number) =>
  `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

const complete = (url: string) =>
  fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: PROMPT, max_tokens: 2 }),
  });

describe('crl serve: slow clients hold no serving slot (a real crl serve process)', () => {
  let root: string;
  let server: Served;
  let quick: Served;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'crl-serve-slow-'));
    await tinyCheckpoint(join(root, 'ckpt'), { seed: 1 });
    server = await startServe(['--policy', join(root, 'ckpt')]); // the default limits and deadline
    quick = await startServe(['--policy', join(root, 'ckpt'), '--body-timeout-ms', '300']);
  }, 60_000);
  afterAll(() => {
    server?.stop();
    quick?.stop();
  });

  it('answers a complete POST /v1/completions with 200 while 32 connections hold partial bodies open', async () => {
    const slow: RawClient[] = [];
    try {
      for (let i = 0; i < 32; i++) {
        const c = await rawClient(server.port);
        slow.push(c);
        // A full request first, so the server is known to be reading this connection...
        await c.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
        await until(() => c.received().includes('{"status":"ok"}'), `client ${i}'s /health answer`);
        // ...then headers and 9 bytes of a 1000-byte body, and nothing more.
        await c.write(`${postHead(server.port, 1000)}{"prompt"`);
      }
      const answered = slow.map((c) => c.received().length);
      const r = await complete(server.url);
      expect(r.status, await r.clone().text()).toBe(200);
      const body = (await r.json()) as { choices: { finish_reason: string }[] };
      expect(body.choices).toHaveLength(1);
      // All 32 were still open and unanswered while that request was served (deadline 10 s).
      expect(slow.map((c) => c.closed())).toEqual(slow.map(() => false));
      expect(slow.map((c) => c.received().length)).toEqual(answered);
    } finally {
      for (const c of slow) c.socket.destroy();
    }
  });

  it('answers 408 and closes the connection when a body is slower than --body-timeout-ms', async () => {
    const c = await rawClient(quick.port);
    await c.write(`${postHead(quick.port, 1000)}{"prompt": [`);
    // A client that keeps sending, one byte at a time, too slowly to finish within 300 ms.
    const trickle = setInterval(() => {
      if (!c.closed() && c.received() === '') c.socket.write('1');
    }, 50);
    try {
      await until(() => c.closed(), 'the server to close the connection');
    } finally {
      clearInterval(trickle);
    }
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received()).toMatch(/connection: close/i);
    // The body is sent chunked: its one chunk is the JSON object.
    const json = JSON.parse(/\{.*\}/s.exec(c.received())![0]) as {
      error: { message: string; type: string; code: number };
    };
    expect(json.error).toMatchObject({ type: 'RequestTimeoutError', code: 408 });
    expect(json.error.message).toMatch(/did not arrive within 300 ms/);
    // A body sent at once is served as before.
    const ok = await rawRequest({
      port: quick.port,
      method: 'POST',
      path: '/v1/completions',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: PROMPT, max_tokens: 1 }),
    }).response;
    expect(ok.status, ok.body).toBe(200);
  });

  it('closes an idle request body at the deadline, freeing its reading place', async () => {
    // --max-reading 1: one client that sends nothing after its headers holds the only place...
    const one = await startServe(['--policy', join(root, 'ckpt'), '--max-reading', '1', '--body-timeout-ms', '2000']);
    try {
      const idle = await rawClient(one.port);
      await idle.write(postHead(one.port, 1000));
      let busy: Response | undefined;
      await until(async () => {
        const r = await complete(one.url);
        if (r.status === 503) busy = r;
        return busy !== undefined || idle.closed();
      }, 'a 503 while the idle client holds the reading place');
      expect(busy?.status).toBe(503);
      expect(((await busy!.json()) as { error: { message: string } }).error.message).toMatch(
        /busy: 1 request bodies are being received/,
      );
      // ...until the deadline closes it; then requests are served again.
      await until(() => idle.closed(), 'the idle client to be closed at its deadline');
      expect(idle.received()).toMatch(/^HTTP\/1\.1 408 /);
      const r = await complete(one.url);
      expect(r.status).toBe(200);
    } finally {
      one.stop();
    }
  });
});
