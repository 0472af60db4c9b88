/**
 * A busy engine is not a dead one (docs/faults.md): a real `crl serve` with one serving slot
 * answers 503 with Retry-After to every request beyond it; the pool waits those out and keeps
 * the replica in, and every request is answered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { EnginePool } from './engine-pool.ts';
import { startServe, tinyCheckpoint, type Served } from './testing/crl-serve.ts';

const TOKEN = 'engine-pool-busy-token';
const { tokenizer } = loadTokenizer('word');
const prompt = tokenizer.encode('<bos> <sys> you are an agent <eot> <user>');
const params = { temperature: 1, topP: 1 };

describe('EnginePool against a full crl serve', { timeout: 180_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-engine-busy-'));
  let served: Served;
  beforeAll(async () => {
    await tinyCheckpoint(join(root, 'policy'), { seed: 1 });
    served = await startServe(['--policy', join(root, 'policy'), '--weights-dir', root, '--max-concurrent', '1'], {
      ...process.env,
      CRL_ADMIN_TOKEN: TOKEN,
    });
  });
  afterAll(() => {
    served.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps a replica with one slot in under 8 concurrent requests, and answers every one', async () => {
    const log: string[] = [];
    const pool = new EnginePool({ urls: [served.url], waitMs: 120_000, log: (l) => log.push(l) });
    await pool.publish({ modelPath: join(root, 'policy'), version: '1', token: TOKEN });
    // Whether eight requests meet the one slot depends on when the server reads them (its sampling
    // blocks its event loop), so rounds go on until the server has turned some away, or 10 rounds.
    let busy = 0;
    for (let round = 0; round < 10 && busy === 0; round++) {
      const requests = Array.from({ length: 8 }, (_, i) => ({
        prompt,
        maxTokens: 200,
        stopTokens: [],
        episodeId: `r${round}-e${i}`,
      }));
      const results = await pool.sampler().sample(requests, params);
      expect(results).toHaveLength(8);
      for (const r of results) {
        expect(r.tokens.length).toBeGreaterThan(0);
        expect(r.weightVersion).toBe('1');
      }
      for (const r of requests) pool.forget(r.episodeId);
      busy += pool.takeBusyWaits();
    }
    // The server did turn requests away (one slot, eight at once), and the pool never took it out.
    expect(busy).toBeGreaterThan(0);
    expect(pool.health()[0]).toMatchObject({ up: true, weightVersion: '1' });
    expect(log.filter((l) => /stopped answering/.test(l))).toEqual([]);
  });
});
