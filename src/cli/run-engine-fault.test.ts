/**
 * An engine that fails mid-run is a fault of the episodes it was serving, not a crash and not a
 * reward of 0 (docs/faults.md): a real `crl serve` SIGKILLed while `crl run --policy sglang:URL`
 * samples on it. The episodes that ended before the kill keep their outcomes; every later one is
 * an `engine` fault, counted in `envErrors` and `faults.engine`, and the run ends normally.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, tinyCheckpoint, type Served } from '../adapters/testing/crl-serve.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { crlAsync } from './testing/spawn-crl.ts';

describe('crl run with an engine killed mid-run', () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-run-engine-fault-'));
  let served: Served | undefined;
  afterAll(() => served?.stop());

  it('ends the episodes it was serving as engine faults; the run completes and counts them', async () => {
    await tinyCheckpoint(join(root, 'policy'), { seed: 3 });
    served = await startServe(['--policy', join(root, 'policy')]);
    const out = join(root, 'eps.jsonl');
    const running = crlAsync(
      [
        'run',
        '--env',
        'kv-ledger',
        '--policy',
        `sglang:${served.url}`,
        '--episodes',
        '8',
        '--concurrency',
        '2',
        '--windows',
        '2',
        '--step-delay-ms',
        '200',
        '--out',
        out,
      ],
      { timeoutMs: 230_000 },
    );
    // Records stream to a partial file as episodes end: once one has ended, the engine dies.
    const partial = () => readdirSync(root).find((f) => f.startsWith('eps.jsonl.partial-'));
    await waitFor(() => partial() && readFileSync(join(root, partial()!), 'utf8').includes('\n'), {
      what: 'the first episode record',
      timeoutMs: 200_000,
      intervalMs: 100,
    });
    served.child.kill('SIGKILL');
    const r = await running;
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.last) as { episodes: number; envErrors: number; faults: Record<string, number> };
    expect(summary.episodes).toBe(8);
    expect(summary.envErrors).toBeGreaterThan(0);
    expect(summary.envErrors).toBeLessThan(8);
    expect(summary.faults).toEqual({ sandbox: 0, verifier: 0, engine: summary.envErrors, environment: 0 });
    expect(r.stderr).toMatch(/episodes ended in a fault.*engine \d+.*engine fault during sample/);

    const records = readRecordsFile(out);
    const faulted = records.filter((x) => x.outcome === 'env-error');
    expect(faulted).toHaveLength(summary.envErrors);
    for (const x of faulted) {
      expect(x.reward).toBe(0);
      expect(x.events.filter((e) => e.kind === 'env-error')).toEqual([
        expect.objectContaining({
          during: 'sample',
          fault: 'engine',
          message: expect.stringMatching(/cannot reach the engine/),
        }),
      ]);
    }
    // The engine had served them: the kill came after the first record, so some faulted
    // episode was reset and waiting for tokens when it died.
    expect(records.filter((x) => x.outcome !== 'env-error').length).toBeGreaterThan(0);
  }, 240_000);
});
