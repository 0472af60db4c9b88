import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../util/testing/wait-for.ts';
import { CRL_BIN } from './testing/spawn-crl.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-sft-interrupt-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// The dense warm-up runs for minutes at the presets' sizes (hours in the tools format). It used to
// be one synchronous loop, so SIGTERM waited for its end: a stopped `crl reproduce` went on for half
// an hour. The signal must end it between two steps.
describe('crl sft interrupted in its dense warm-up', () => {
  it('exits 143 with one line while the warm-up has a million steps to go', async () => {
    const child = spawn(
      CRL_BIN,
      [
        'sft',
        '--env',
        'kv-ledger',
        '--model',
        'tiny',
        '--episodes',
        '4',
        '--epochs',
        '1',
        '--dense',
        '{"steps":1000000,"recallSteps":0,"evalEvery":1}',
        '--out',
        join(root, 'sft'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      // A line per evaluation (every step here): the warm-up is running.
      await waitFor(() => /dense warm-up 2\//.test(stderr), {
        what: 'the second step of the dense warm-up',
        timeoutMs: 200_000,
        intervalMs: 50,
      });
    } finally {
      child.kill('SIGTERM');
    }
    const code = await Promise.race([
      closed,
      new Promise<'still running'>((r) => setTimeout(() => r('still running'), 120_000)),
    ]);
    if (code === 'still running') child.kill('SIGKILL');
    expect(code).toBe(143);
    expect(stderr).toMatch(/interrupted \(SIGTERM\)/);
  }, 400_000);
});
