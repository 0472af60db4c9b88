import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SandboxSession } from '../../sandbox/backend.ts';
import { bwrapBackend } from '../../sandbox/bwrap-backend.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { generateRepoRepair } from './generate.ts';
import { repoRepair, repoRepairKnobs } from './index.ts';
import { attackFolder, plainFolder } from './testing/grader-attacks.ts';
import { pytestAvailable } from './testing/pytest-available.ts';

/**
 * The signed verdict of repo-repair's grader (grade-script.ts), driven directly in a bubblewrap
 * sandbox, where the runner shares the grader's uid: the key in /tests/.verdict-key is gone before
 * the package runs, reward.sig is the HMAC-SHA256 of reward.txt under it, a reward the package
 * wrote after killing the grader carries no valid signature, and a key the grader cannot remove
 * (a read-only /tests) means no verdict at all.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-grade-verdict-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const task = generateRepoRepair(repoRepair.evalSeeds.start, repoRepairKnobs.parse({}));
const available = sandboxAvailable('repo-repair signed verdicts') && pytestAvailable('repo-repair signed verdicts');

/** The folder's repository at /app, its verifier files at /tests (writable unless `readOnlyTests`). */
async function startTask(dir: string, readOnlyTests = false): Promise<SandboxSession> {
  return bwrapBackend().start({
    dirs: [
      { path: '/app', writable: true },
      { path: '/tests', writable: !readOnlyTests },
      { path: '/solution', writable: false },
      { path: '/logs', writable: true },
    ],
    workdir: '/app',
    seed: [
      { from: join(dir, 'environment'), to: '/app', skip: ['Dockerfile', 'setup.sh'] },
      { from: join(dir, 'tests'), to: '/tests' },
      { from: join(dir, 'solution'), to: '/solution' },
    ],
    emptyDirs: ['/logs/verifier'],
    limits: { memoryMb: 1024 },
  });
}

interface Verdict {
  txt: string | null;
  sig: string | null;
  keyLeft: boolean;
  /** What the package wrote to /app/saw-key, if anything. */
  sawKey: string | null;
  stdout: string;
}

/** Writes a fresh key into the folder's tests/, runs `commands` then the grader; returns what it left. */
async function verdict(dir: string, key: string, commands: string[], readOnlyTests = false): Promise<Verdict> {
  writeFileSync(join(dir, 'tests', '.verdict-key'), key + '\n');
  const s = await startTask(dir, readOnlyTests);
  try {
    for (const c of commands) expect((await s.run(c, { timeoutMs: 60_000 })).exitCode, c).toBe(0);
    await s.runFresh('bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1', { timeoutMs: 120_000 });
    const read = async (path: string) => (await s.readFile(path, { maxBytes: 10_000 }))?.toString() ?? null;
    // (The agent's shell is gone after runFresh: files are read, not listed by a command.)
    const keyLeft = (await read('/tests/.verdict-key')) !== null;
    return {
      txt: await read('/logs/verifier/reward.txt'),
      sig: await read('/logs/verifier/reward.sig'),
      keyLeft,
      sawKey: await read('/app/saw-key'),
      stdout: (await read('/logs/verifier/test-stdout.txt')) ?? '',
    };
  } finally {
    await s.close();
  }
}

const hmac = (key: string, text: string): string =>
  createHmac('sha256', Buffer.from(key, 'hex')).update(text).digest('hex') + '\n';
const freshKey = (): string => randomBytes(32).toString('hex');

describe.skipIf(!available)("repo-repair's signed verdict on bubblewrap (one uid in the sandbox)", () => {
  it('the key is gone before the package runs; reward.sig signs reward.txt; without a key nothing is signed', async () => {
    const folder = plainFolder(join(root, 'plain'), task);
    const key = freshKey();
    // The package records, at import, whether it could see the key.
    const peek = `printf 'import os\\nopen("/app/saw-key", "w").write(str(os.path.exists("/tests/.verdict-key")))\\n' >> calc/__init__.py`;
    const fixed = await verdict(folder, key, ['bash /solution/solve.sh', peek]);
    expect(fixed.txt, fixed.stdout).toBe('1\n');
    expect(fixed.sig).toBe(hmac(key, '1\n'));
    expect(fixed.keyLeft).toBe(false);
    expect(fixed.sawKey).toBe('False');
    const given = await verdict(folder, freshKey(), []);
    expect(given.txt, given.stdout).toBe('0\n');
    expect(given.stdout).toMatch(
      /FAILED tests\/test_\w+\.py::test_\w+: calc\.\w+\.\w+\(\d+, \d+\) returned -?\d+, expected/,
    );
    rmSync(join(folder, 'tests', '.verdict-key'));
    const s = await startTask(folder);
    try {
      await s.run('bash /solution/solve.sh', { timeoutMs: 60_000 });
      await s.runFresh('bash /tests/test.sh', { timeoutMs: 120_000 });
      expect((await s.readFile('/logs/verifier/reward.txt', { maxBytes: 100 }))?.toString()).toBe('1\n');
      expect(await s.readFile('/logs/verifier/reward.sig', { maxBytes: 100 })).toBeNull();
    } finally {
      await s.close();
    }
  }, 300_000);

  it('a package that kills the grader and writes reward 1 leaves no valid signature', async () => {
    const folder = attackFolder(join(root, 'kill-grader'), task, 'kill-grader');
    const key = freshKey();
    const r = await verdict(folder, key, ['bash /solution/solve.sh']);
    // The grader shares its uid with the runner here: the forgery lands, unsigned.
    expect(r.txt).toBe('1\n');
    expect(r.sig).not.toBe(hmac(key, r.txt!));
    expect(r.keyLeft).toBe(false);
  }, 300_000);

  it('stale reward files, links and directories in their place are replaced by regular files', async () => {
    const folder = plainFolder(join(root, 'stale'), task);
    const key = freshKey();
    const stale = [
      'mkdir -p /logs/verifier/reward.txt/x',
      'ln -s /app/sig /logs/verifier/reward.sig',
      'echo \'{"reward": 1}\' > /logs/verifier/reward.json',
    ];
    const r = await verdict(folder, key, stale);
    expect(r.txt, r.stdout).toBe('0\n');
    expect(r.sig).toBe(hmac(key, '0\n'));
  }, 300_000);

  it('a key the grader cannot remove (read-only /tests) means no verdict', async () => {
    const folder = plainFolder(join(root, 'read-only'), task);
    const r = await verdict(folder, freshKey(), ['bash /solution/solve.sh'], true);
    expect(r.txt).toBeNull();
    expect(r.sig).toBeNull();
    expect(r.stdout).toMatch(/grade\.py wrote no verdict: OSError: .*Read-only file system/);
  }, 300_000);
});
