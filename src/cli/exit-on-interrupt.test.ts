import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { CRL_BIN } from './testing/spawn-crl.ts';

const available = sandboxAvailable('Ctrl-C and SIGTERM during sandboxed work');
const root = mkdtempSync(join(tmpdir(), 'crl-interrupt-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Starts `crl args` with its own temporary directory, waits until an episode holds a sandbox root
 * and a generated task folder there, sends `signal`, and returns the exit code, stderr and what is
 * left in that directory.
 */
async function interrupted(name: string, args: string[], signal: 'SIGINT' | 'SIGTERM') {
  const tmp = mkdtempSync(join(root, `${name}-`));
  const child = spawn(CRL_BIN, args, { env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const ours = () => readdirSync(tmp).filter((f) => f.startsWith('crl-'));
  try {
    await waitFor(
      () => ours().some((f) => f.startsWith('crl-sandbox-')) && ours().some((f) => f.startsWith('crl-shell-ledger-')),
      {
        what: `${name}: a sandbox root and a task folder in its temporary directory`,
        timeoutMs: 200_000,
        intervalMs: 50,
      },
    );
  } finally {
    child.kill(signal);
  }
  return { code: await closed, stderr, left: ours() };
}

describe.skipIf(!available)('a command interrupted in the middle of sandboxed episodes', () => {
  it('exits 143 / 130 with one line, and leaves no sandbox root or task folder behind', async () => {
    const [evalRun, sftRun] = await Promise.all([
      interrupted(
        'eval',
        [
          'eval',
          '--policy',
          'expert',
          '--env',
          'shell-ledger',
          '--tasks',
          '400',
          '--samples',
          '4',
          '--windows',
          '4',
          '--out',
          join(root, 'eval.json'),
        ],
        'SIGTERM',
      ),
      interrupted(
        'sft',
        [
          'sft',
          '--env',
          'shell-ledger',
          '--model',
          'tiny',
          '--episodes',
          '400',
          '--epochs',
          '1',
          '--out',
          join(root, 'sft'),
        ],
        'SIGINT',
      ),
    ]);
    expect(evalRun.code, evalRun.stderr).toBe(143);
    expect(evalRun.stderr).toMatch(/crl: interrupted \(SIGTERM\)\n$/);
    expect(evalRun.left).toEqual([]);
    expect(sftRun.code, sftRun.stderr).toBe(130);
    expect(sftRun.stderr).toMatch(/crl: interrupted \(SIGINT\)\n$/);
    expect(sftRun.left).toEqual([]);
  }, 300_000); // its waits allow 200 s each on a loaded machine
});
