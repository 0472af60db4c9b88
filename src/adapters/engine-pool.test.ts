/**
 * The engine pool against real `crl serve` processes: which replica an episode's requests go to,
 * what happens when one stops answering and comes back, and that no request is answered by
 * weights other than the ones asked for.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { EnginePool } from './engine-pool.ts';
import { EngineError } from './http-sampler.ts';
import { startServe, tinyCheckpoint, type Served } from './testing/crl-serve.ts';

const TOKEN = 'engine-pool-test-token';
const { tokenizer } = loadTokenizer('word');
const prompt = tokenizer.encode('<bos> <sys> you are an agent <eot> <user>');
const params = { temperature: 1, topP: 1 };
const ask = (episodeId: string) => ({ prompt, maxTokens: 2, stopTokens: [], episodeId });

describe('EnginePool (real crl serve replicas)', { timeout: 180_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-engine-pool-'));
  const env = { ...process.env, CRL_ADMIN_TOKEN: TOKEN };
  const serveArgs = () => ['--policy', join(root, 'policy'), '--weights-dir', root];
  const served: Served[] = [];
  beforeAll(async () => {
    await tinyCheckpoint(join(root, 'policy'), { seed: 1 });
    served.push(...(await Promise.all([startServe(serveArgs(), env), startServe(serveArgs(), env)])));
  });
  afterAll(() => served.forEach((s) => s.stop()));

  it('sticks episodes to replicas, fails over, takes a replica back only once it serves the asked weights', async () => {
    const [a, b] = served as [Served, Served];
    const pool = new EnginePool({ urls: [a.url, b.url], probeMs: 100, waitMs: 60_000 });
    await pool.publish({ modelPath: join(root, 'policy'), version: '1', token: TOKEN });
    expect(pool.health().map((h) => h.weightVersion)).toEqual(['1', '1']);
    // SGLang's reads of the label: GET /get_weight_version and GET /model_info.
    for (const path of ['/get_weight_version', '/model_info'])
      expect(((await (await fetch(new URL(path, a.url))).json()) as { weight_version: string }).weight_version).toBe(
        '1',
      );
    const sampler = pool.sampler();

    // Two episodes' first requests go to different replicas (least loaded); later ones stick.
    const [r1, r2] = await sampler.sample([ask('e1'), ask('e2')], params);
    expect([r1!.weightVersion, r2!.weightVersion]).toEqual(['1', '1']);
    const home1 = pool.replicaOf('e1')!;
    const home2 = pool.replicaOf('e2')!;
    expect(new Set([home1, home2])).toEqual(new Set([a.url, b.url]));
    for (let i = 0; i < 3; i++) {
      await sampler.sample([ask('e1')], params);
      expect(pool.replicaOf('e1')).toBe(home1);
    }

    // e1's replica dies: e1's next request is answered by the other one, which e1 now sticks to.
    const dead = home1 === a.url ? a : b;
    const alive = dead === a ? b : a;
    dead.child.kill('SIGKILL');
    await new Promise((res) => dead.child.once('exit', res));
    const [after] = await sampler.sample([ask('e1')], params);
    expect(after!.tokens.length).toBeGreaterThan(0);
    expect(pool.replicaOf('e1')).toBe(alive.url);
    expect(pool.describe()).toMatch(/^1\/2 up/);

    // A fresh server on the dead one's port serves its start weights ('default'), not version 1:
    // it is up again, but version-1 requests keep away from it until a publish reaches it.
    const back = await startServe(serveArgs(), env, dead.port);
    served.push(back);
    await sampler.sample([ask('e3')], params); // any request probes the down replica
    await waitFor(() => pool.health().find((h) => h.url === dead.url)?.up, { what: 'the restarted replica to be up' });
    expect(pool.health().find((h) => h.url === dead.url)!.weightVersion).toBe('default');
    for (const id of ['e4', 'e5', 'e6']) {
      const [r] = await sampler.sample([ask(id)], params);
      expect(r!.weightVersion).toBe('1');
      expect(pool.replicaOf(id)).toBe(alive.url);
    }

    // The next publish reaches both; the least-loaded one takes new episodes again.
    await pool.publish({ modelPath: join(root, 'policy'), version: '2', token: TOKEN });
    expect(pool.health().map((h) => [h.up, h.weightVersion])).toEqual([
      [true, '2'],
      [true, '2'],
    ]);
    for (const id of ['e1', 'e2', 'e3', 'e4', 'e5', 'e6']) pool.forget(id);
    await sampler.sample([ask('n1'), ask('n2')], params);
    expect(new Set([pool.replicaOf('n1'), pool.replicaOf('n2')])).toEqual(new Set([a.url, b.url]));
  });

  it('fails with an EngineError naming every replica when none answers within its wait', async () => {
    const pool = new EnginePool({ urls: ['http://127.0.0.1:1', 'http://127.0.0.1:2'], waitMs: 500, probeMs: 100 });
    const e = await pool
      .sampler()
      .sample([ask('x')], params)
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as Error).message).toMatch(
      /no engine replica answered within 1 s: http:\/\/127\.0\.0\.1:1 down .*http:\/\/127\.0\.0\.1:2 down/,
    );
  });

  it('a publish no replica takes is an EngineError; a refused one (wrong token) says why', async () => {
    const down = new EnginePool({ urls: ['http://127.0.0.1:1'] });
    await expect(down.publish({ modelPath: join(root, 'policy'), version: '1', token: TOKEN })).rejects.toThrow(
      /no engine replica took the weights \(version 1\)/,
    );
    const alive = served.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
    const wrong = new EnginePool({ urls: [alive[0]!.url] });
    await expect(wrong.publish({ modelPath: join(root, 'policy'), version: '1', token: 'wrong' })).rejects.toThrow(
      /HTTP 401/,
    );
  });
});
