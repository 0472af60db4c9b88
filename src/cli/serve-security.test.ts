import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import type { PolicyModel } from '../model/network/policy.ts';
import { waitFor } from '../util/testing/wait-for.ts';

const TOKEN = 'a-long-random-admin-token-for-tests';

/** Waits (up to 60 s) for a condition on a child's output, which arrives on its own schedule. */
async function until(ok: () => boolean): Promise<void> {
  await waitFor(ok, { what: "a line in the server's output", timeoutMs: 60_000, intervalMs: 100 }).catch(() => {});
}
const { tokenizer } = loadTokenizer('word');
const PROMPT = tokenizer.encode('<bos> <sys> you are an agent <eot> <user>');

/**
 * `crl serve`'s weight endpoint and request guards against a real server process
 * (docs/decisions/0019): token, JSON only, Host and Origin, the --weights-dir allow-list,
 * checkpoint validation with the old weights kept, bounded bodies and concurrency.
 */
describe('crl serve security (a real crl serve process)', () => {
  let root: string;
  let server: Served;
  let first: PolicyModel;
  let second: PolicyModel;
  let weightsRoot: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'crl-serve-sec-'));
    weightsRoot = join(root, 'weights');
    const outside = join(root, 'outside');
    mkdirSync(weightsRoot);
    mkdirSync(outside);
    first = await tinyCheckpoint(join(root, 'served'), { seed: 1 });
    second = await tinyCheckpoint(join(weightsRoot, 'next'), { seed: 2 });
    await tinyCheckpoint(join(weightsRoot, 'nan'), { seed: 3, fill: Number.NaN });
    await tinyCheckpoint(join(weightsRoot, 'inf'), { seed: 3, fill: Number.POSITIVE_INFINITY });
    await tinyCheckpoint(join(weightsRoot, 'other-model'), { seed: 4, config: { maxSeqLen: 128 } });
    await tinyCheckpoint(join(outside, 'ckpt'), { seed: 5 });
    symlinkSync(join(outside, 'ckpt'), join(weightsRoot, 'escape')); // a link out of the root
    server = await startServe([
      '--policy',
      join(root, 'served'),
      '--weights-dir',
      weightsRoot,
      '--admin-token',
      TOKEN,
      '--max-concurrent',
      '3',
      '--max-reading',
      '3',
    ]);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
  afterAll(() => server?.stop());

  const update = (modelPath: string, headers: Record<string, string> = {}) =>
    rawRequest({
      port: server.port,
      method: 'POST',
      path: '/update_weights_from_disk',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
      body: JSON.stringify({ model_path: modelPath }),
    }).response;

  /** Greedy tokens and their logprobs from the server (vLLM API, token ids in and out). */
  async function sampled(): Promise<{ tokens: number[]; logprobs: number[] }> {
    const r = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: PROMPT,
        max_tokens: 6,
        temperature: 0,
        logprobs: 0,
        return_tokens_as_token_ids: true,
      }),
    });
    const body = (await r.json()) as { choices: { logprobs: { tokens: string[]; token_logprobs: number[] } }[] };
    const lp = body.choices[0]!.logprobs;
    return { tokens: lp.tokens.map((t) => Number(t.slice('token_id:'.length))), logprobs: lp.token_logprobs };
  }

  /** Largest gap between the server's logprobs and `policy`'s teacher-forced ones on the same tokens. */
  function gapTo(policy: PolicyModel, s: { tokens: number[]; logprobs: number[] }): number {
    const lp = policy.forward([Int32Array.from([...PROMPT, ...s.tokens])]).logprobs[0]!;
    return Math.max(...s.tokens.map((_, t) => Math.abs(s.logprobs[t]! - lp[PROMPT.length + t]!)));
  }

  it('loads a checkpoint under --weights-dir with the token, and refuses every other request', async () => {
    await until(() => /process list/.test(server.stderr()));
    expect(server.stderr()).toMatch(/--admin-token is visible to other users .* set CRL_ADMIN_TOKEN instead/);
    const before = await sampled();
    expect(gapTo(first, before)).toBeLessThan(1e-4);

    const noToken = await update(join(weightsRoot, 'next'), { authorization: '' });
    expect(noToken.status).toBe(401);
    expect(noToken.headers['www-authenticate']).toContain('Bearer');
    expect((await update(join(weightsRoot, 'next'), { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await update(join(weightsRoot, 'next'), { 'content-type': 'text/plain' })).status).toBe(415);
    // The same answer for outside the root, a `..` escape, a symlink out, and a path that does not exist.
    const outside = await update(join(root, 'outside', 'ckpt'));
    expect(outside.status).toBe(400);
    for (const p of [
      join(weightsRoot, '..', 'outside', 'ckpt'),
      join(weightsRoot, 'escape'),
      join(weightsRoot, 'nope'),
      '/etc',
    ]) {
      const r = await update(p);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toEqual(JSON.parse(outside.body));
    }
    for (const bad of ['nan', 'inf']) {
      const r = await update(join(weightsRoot, bad));
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body).message).toMatch(/non-finite values/);
    }
    expect(JSON.parse((await update('other-model')).body).message).toMatch(/another model .*maxSeqLen 128, served 256/);

    // Nothing got through: still the first weights, finite logprobs.
    const still = await sampled();
    expect(still.logprobs.every(Number.isFinite)).toBe(true);
    expect(gapTo(first, still)).toBeLessThan(1e-4);

    const ok = await update('next'); // relative to --weights-dir
    expect(ok.status, ok.body).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ success: true });
    const after = await sampled();
    expect(gapTo(second, after)).toBeLessThan(1e-4);
    expect(gapTo(first, after)).toBeGreaterThan(1e-3);

    // A failed update after a good one keeps the good one.
    expect((await update(join(weightsRoot, 'nan'))).status).toBe(400);
    const kept = await sampled();
    expect(kept.logprobs.every(Number.isFinite)).toBe(true);
    expect(gapTo(second, kept)).toBeLessThan(1e-4);
  });

  it('refuses a Host that does not name the server (DNS rebinding) and cross-origin requests', async () => {
    const get = (headers: Record<string, string>) =>
      rawRequest({ port: server.port, method: 'GET', path: '/health', headers }).response;
    expect((await get({ host: `127.0.0.1:${server.port}` })).status).toBe(200);
    expect((await get({ host: `localhost:${server.port}` })).status).toBe(200);
    expect((await get({ host: `attacker.example:${server.port}` })).status).toBe(403);
    expect((await get({ host: `127.0.0.1:${server.port + 1}` })).status).toBe(403);
    expect((await get({ host: `127.0.0.1:${server.port}`, origin: 'http://attacker.example' })).status).toBe(403);
    expect((await get({ host: `127.0.0.1:${server.port}`, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // A page's text/plain form post with the token guessed still cannot load weights.
    const form = await update(join(weightsRoot, 'next'), {
      'content-type': 'text/plain',
      origin: 'http://attacker.example',
    });
    expect(form.status).toBe(403);
  });

  it('refuses large bodies by Content-Length and while streaming, and answers 503 when full', async () => {
    const big = Buffer.alloc(7 << 20, 0x20);
    const bigs = await Promise.all(
      Array.from(
        { length: 10 },
        () =>
          rawRequest({
            port: server.port,
            method: 'POST',
            path: '/v1/completions',
            headers: { 'content-type': 'application/json', 'content-length': String(big.length) },
            body: big,
          }).response,
      ),
    );
    for (const r of bigs) expect(r.status).toBe(413);
    const chunked = await rawRequest({
      port: server.port,
      method: 'POST',
      path: '/v1/completions',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: big,
    }).response;
    expect(chunked.status).toBe(413);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);

    // --max-reading 3: three clients that never finish their bodies hold every reading place
    // (never a serving slot: src/cli/serve-slow-clients.test.ts).
    const slow = Array.from({ length: 3 }, () =>
      rawRequest({
        port: server.port,
        method: 'POST',
        path: '/v1/completions',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        slow: true,
      }),
    );
    const complete = () =>
      fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: PROMPT, max_tokens: 1 }),
      });
    // The server takes the slow clients' slots on its own schedule: ask until it answers busy.
    const busy = await waitFor(
      async () => {
        const r = await complete();
        return r.status === 503 ? r : null;
      },
      { what: 'a 503 while the slow clients hold every slot', timeoutMs: 60_000, intervalMs: 50 },
    );
    expect(busy.status).toBe(503);
    expect(busy?.headers.get('retry-after')).toBe('1');
    for (const s of slow) {
      s.response.catch(() => {}); // they end without an answer: we hang up on them
      s.abort();
    }
    // Slots come back once those clients are gone.
    let served = 0;
    await waitFor(async () => (served = (await complete()).status) === 200, {
      what: 'a 200 once the slow clients are gone',
      timeoutMs: 60_000,
      intervalMs: 50,
    }).catch(() => {}); // the expectation below shows the last status
    expect(served).toBe(200);
  });
});

describe('crl serve: the endpoint is off without a token; risky flags are called out', () => {
  it('answers 403 without an admin token, refuses a token without --weights-dir, warns on 0.0.0.0', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-serve-off-'));
    await tinyCheckpoint(join(root, 'ckpt'), { seed: 1 });
    const open = await startServe(['--policy', join(root, 'ckpt'), '--host', '0.0.0.0', '--weights-dir', root]);
    try {
      const r = await rawRequest({
        port: open.port,
        method: 'POST',
        path: '/update_weights_from_disk',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ model_path: join(root, 'ckpt') }),
      }).response;
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toMatch(/disabled; start crl serve with --admin-token/);
      expect(open.stderr()).toMatch(/warning: listening on 0\.0\.0\.0, reachable from other machines/);
      expect(open.stderr()).toMatch(/--weights-dir without an admin token/);
    } finally {
      open.stop();
    }
    const crl = join(new URL('../..', import.meta.url).pathname, 'bin', 'crl');
    const noDir = spawnSync(crl, ['serve', '--policy', join(root, 'ckpt'), '--admin-token', TOKEN], {
      encoding: 'utf8',
    });
    expect(noDir.status).toBe(2);
    expect(noDir.stderr).toMatch(/name at least one/);
    // A token from the environment is not in the process list, but a short one is still called out.
    const short = await startServe(['--policy', join(root, 'ckpt'), '--weights-dir', root], {
      ...process.env,
      CRL_ADMIN_TOKEN: 'secret',
    });
    await until(() => /short enough to guess/.test(short.stderr()));
    short.stop();
    expect(short.stderr()).toMatch(/the admin token has 6 characters, short enough to guess/);
    expect(short.stderr()).not.toMatch(/process list/);
  });
});

describe('crl serve: an empty CRL_ADMIN_TOKEN', () => {
  it('counts as unset: the server starts with weight loading off and a warning that names the variable', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-serve-empty-token-'));
    await tinyCheckpoint(join(root, 'ckpt'), { seed: 1 });
    const served = await startServe(['--policy', join(root, 'ckpt'), '--weights-dir', root], {
      ...process.env,
      CRL_ADMIN_TOKEN: '',
    });
    try {
      await until(() => /Ctrl-C stops/.test(served.stderr()));
      expect(served.stderr()).toMatch(/warning: CRL_ADMIN_TOKEN is set but empty, so it is ignored/);
      expect(served.stderr()).toMatch(/weight loading disabled/);
      const r = await rawRequest({
        port: served.port,
        method: 'POST',
        path: '/update_weights_from_disk',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' },
        body: JSON.stringify({ model_path: join(root, 'ckpt') }),
      }).response;
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toMatch(/weight loading is disabled/);
    } finally {
      served.stop();
    }
  });
});
