import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countLinesTask, TASK_TOML, writeTaskFolder } from '../env/harbor/testing/task-folders.ts';
import { CRL_BIN, crl } from '../cli/testing/spawn-crl.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { TEMP_PREFIX } from './host-files.ts';
import { ownerTag, removeStaleDirs } from './stale-dirs.ts';
import { sandboxAvailable } from './testing/sandbox-available.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-stale-dirs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Starts `sleep`, returns its owner tag while it runs, then kills it and waits for its exit. */
async function deadOwnerTag(): Promise<string> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const tag = ownerTag(child.pid);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  return tag;
}

describe('removeStaleDirs', () => {
  it('removes the directories of dead owners only', async () => {
    const dir = mkdtempSync(join(root, 'unit-'));
    const dead = `${TEMP_PREFIX}${await deadOwnerTag()}-abcdef`;
    const mine = `${TEMP_PREFIX}${ownerTag()}-abcdef`;
    const parent = `${TEMP_PREFIX}${ownerTag(process.ppid)}-abcdef`; // alive: the test runner's parent
    const reused = `${TEMP_PREFIX}${process.ppid}.1-abcdef`; // a live pid with another start time: its owner died
    const old = `${TEMP_PREFIX}abcdef`; // made before owners were named: not ours to judge
    for (const n of [dead, mine, parent, reused, old]) mkdirSync(join(dir, n, 'app'), { recursive: true });
    expect(removeStaleDirs(dir).sort()).toEqual([dead, reused].sort());
    expect(readdirSync(dir).sort()).toEqual([mine, parent, old].sort());
  });
});

describe.skipIf(!sandboxAvailable('stale sandbox directories after kill -9'))('a killed crl run', () => {
  it('leaves sandbox directories that the next run removes', async () => {
    const tmp = mkdtempSync(join(root, 'tmp-'));
    chmodSync(tmp, 0o711); // the sandbox's user must reach its directory (as root)
    const suite = join(root, 'suite');
    writeTaskFolder(join(suite, 'slow'), {
      'instruction.md': 'x',
      'task.toml': TASK_TOML,
      'tests/test.sh': 'echo 1 > /logs/verifier/reward.txt\n',
      'solution/solve.sh': 'sleep 600\n',
    });
    const env = { ...process.env, TMPDIR: tmp };
    const out = join(root, 'killed.jsonl');
    const child = spawn(
      process.execPath,
      [CRL_BIN, 'run', '--env', `harbor:${suite}`, '--policy', 'harbor-oracle', '--episodes', '2', '--out', out],
      { stdio: 'ignore', env },
    );
    const sandboxes = () => readdirSync(tmp).filter((n) => n.startsWith(TEMP_PREFIX));
    await waitFor(() => sandboxes().length === 2, { timeoutMs: 60_000, what: 'two sandboxes to start' });
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    const left = sandboxes();
    expect(left).toHaveLength(2); // kill -9 gives no chance to clean up

    countLinesTask(join(root, 'quick', 'count-lines'), 3);
    const r = crl(
      [
        'run',
        '--env',
        `harbor:${join(root, 'quick')}`,
        '--policy',
        'harbor-oracle',
        '--episodes',
        '1',
        '--out',
        join(root, 'next.jsonl'),
      ],
      { env },
    );
    expect(r.code).toBe(0);
    for (const n of left) expect(existsSync(join(tmp, n))).toBe(false);
    expect(sandboxes()).toEqual([]);
  });
});
