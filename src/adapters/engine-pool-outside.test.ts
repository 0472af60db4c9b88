/**
 * The engine pool's rules for replicas that are not `crl serve` (docs/faults.md), against real
 * server processes shaped as vLLM's OpenAI-compatible server (testing/vllm-shaped-server.ts):
 * vLLM reports no weight version, so a request that asks for one is refused there unless the
 * caller accepts unversioned replicas; an HTTP 500 (an error, not "busy") is asked again and takes
 * a replica out only when it repeats.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { EnginePool } from './engine-pool.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { EngineError } from './http-sampler.ts';
import { REPEATED_FAILURES } from './replica-answers.ts';
import { startVllmShaped, type VllmShaped } from './testing/vllm-shaped.ts';

const params = { temperature: 1, topP: 1 };
const ask = (episodeId: string) => ({ prompt: [1, 2, 3], maxTokens: 4, stopTokens: [], episodeId });
/** The statuses of the completions a server answered, in order, once its access log shows `n` of them. */
const statuses = (s: VllmShaped, n: number) =>
  waitFor(
    () => {
      const codes = s
        .accessLog()
        .filter((l) => l.includes('"POST /v1/completions '))
        .map((l) => / (\d{3}) /.exec(l)![1]!);
      return codes.length >= n ? codes : null;
    },
    { what: `${n} completions in the access log` },
  );

describe('EnginePool against vLLM-shaped servers', { timeout: 120_000 }, () => {
  const started: VllmShaped[] = [];
  const start = async (options: { fail?: number } = {}) => {
    const s = await startVllmShaped(options);
    started.push(s);
    return s;
  };
  afterAll(() => started.forEach((s) => s.stop()));

  it('a replica that reports no weight version is refused for a versioned request with a clear error, used when accepted', async () => {
    const vllm = await start();
    const strict = new EnginePool({ urls: [vllm.url], protocol: 'vllm', probeMs: 50, waitMs: 30_000 });
    const refused = await strict
      .sampler({ weightVersion: '3' })
      .sample([ask('e1')], params)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EngineError);
    expect((refused as Error).message).toMatch(
      new RegExp(`engine ${vllm.url} reports no weight version .*weight version 3.*--unversioned-ok true`),
    );
    // Refused before any completion was asked for: only the version probe reached it.
    await waitFor(() => vllm.accessLog().some((l) => l.includes('"GET /get_weight_version HTTP/1.1" 404 ')), {
      what: 'the version probe in the access log',
    });
    expect(vllm.accessLog().filter((l) => l.includes('POST /v1/completions'))).toEqual([]);
    expect(strict.describe()).toBe('1/1 up (unversioned)');

    const accepting = new EnginePool({
      urls: [vllm.url],
      protocol: 'vllm',
      probeMs: 50,
      waitMs: 30_000,
      acceptUnversioned: true,
    });
    const [r] = await accepting.sampler({ weightVersion: '3' }).sample([ask('e1')], params);
    expect(r!.tokens.length).toBeGreaterThan(0);
    expect(r!.weightVersion).toBeUndefined();
    expect(accepting.health()[0]).toMatchObject({ up: true, weightVersion: null });

    // Publishing to it fails at once: vLLM has no /update_weights_from_disk.
    await expect(accepting.publish({ modelPath: '/nonexistent', version: '4' })).rejects.toThrow(/HTTP 404/);
  });

  it('one HTTP 500 is asked again and keeps the replica; repeated ones take it out and another replica answers', async () => {
    const hiccup = await start({ fail: 1 });
    const log: string[] = [];
    const one = new EnginePool({ urls: [hiccup.url], protocol: 'vllm', waitMs: 30_000, log: (l) => log.push(l) });
    const [r] = await one.sampler().sample([ask('e1')], params);
    expect(r!.tokens.length).toBeGreaterThan(0);
    // The 500, then the same replica answered the request again; it never left the pool.
    expect(await statuses(hiccup, 2)).toEqual(['500', '200']);
    expect(log).toEqual([]);
    expect(one.health()[0]!.up).toBe(true);

    const broken = await start({ fail: 1000 });
    const healthy = await start();
    const lines: string[] = [];
    const pool = new EnginePool({
      urls: [broken.url, healthy.url],
      protocol: 'vllm',
      waitMs: 30_000,
      probeMs: 60_000, // no probe brings the broken one back during the test
      log: (l) => lines.push(l),
    });
    // Equal load: the first replica takes the episode, answers 500 REPEATED_FAILURES times, and is taken out.
    const [answered] = await pool.sampler().sample([ask('e2')], params);
    expect(answered!.tokens.length).toBeGreaterThan(0);
    expect(pool.replicaOf('e2')).toBe(healthy.url);
    expect(await statuses(broken, REPEATED_FAILURES)).toEqual(Array(REPEATED_FAILURES).fill('500'));
    expect(pool.health()[0]).toMatchObject({
      up: false,
      lastError: expect.stringMatching(/3 answers in a row: HTTP 500/),
    });
    expect(lines).toEqual([expect.stringMatching(new RegExp(`engine ${broken.url} stopped answering`))]);
  });
});
