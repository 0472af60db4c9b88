import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HarborTaskError, loadHarborTask } from './load-tasks.ts';
import { MAX_TASK_FILE_BYTES } from './task-files.ts';
import { TASK_TOML, writeTaskFolder } from './testing/task-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-task-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const SECRET = 'host-secret-7c1d9e';
const hostFile = join(root, 'host.txt');
writeFileSync(hostFile, `${SECRET}\n`);
const base = { 'task.toml': TASK_TOML, 'tests/test.sh': 'true\n' };
const task = (files: Record<string, string>): string => writeTaskFolder(join(root, `t${n++}`), files);

/** The loader's error for dir: a HarborTaskError that never quotes the host file. */
function refusal(dir: string): string {
  try {
    loadHarborTask(dir);
  } catch (e) {
    expect(e).toBeInstanceOf(HarborTaskError);
    expect((e as Error).message).not.toContain(SECRET);
    return (e as Error).message;
  }
  throw new Error(`${dir} loaded`);
}

describe('task folder files are read as regular files inside the folder', () => {
  it('refuses instruction.md or task.toml linked to a host file, without quoting it', () => {
    const a = task(base);
    symlinkSync(hostFile, join(a, 'instruction.md'));
    expect(refusal(a)).toMatch(/instruction\.md is a symbolic link/);
    const b = task({ 'instruction.md': 'x', 'tests/test.sh': 'true\n' });
    symlinkSync(hostFile, join(b, 'task.toml'));
    expect(refusal(b)).toMatch(/task\.toml is a symbolic link/);
  });

  it('refuses a device and a FIFO at once (no read, no hang) and a file over the size bound', () => {
    const dev = task(base);
    symlinkSync('/dev/zero', join(dev, 'instruction.md'));
    expect(refusal(dev)).toMatch(/instruction\.md is a symbolic link/);
    const fifo = task(base);
    execFileSync('mkfifo', [join(fifo, 'instruction.md')]);
    expect(refusal(fifo)).toMatch(/instruction\.md must be a regular file; it is a FIFO/);
    const big = task({ ...base, 'instruction.md': 'x'.repeat(MAX_TASK_FILE_BYTES + 1) });
    expect(refusal(big)).toMatch(/instruction\.md is \d+ bytes; a task file may hold at most/);
  });

  it('quotes no line of a task.toml that is not TOML', () => {
    const t = task({ ...base, 'instruction.md': 'x', 'task.toml': `${SECRET} = = [\n` });
    expect(refusal(t)).toMatch(/task\.toml is not valid TOML \(line 1, column \d+\)$/);
  });

  it('refuses a timeout longer than a timer can wait, naming the key', () => {
    const t = task({ ...base, 'instruction.md': 'x', 'task.toml': '[verifier]\ntimeout_sec = 3000000\n' });
    expect(refusal(t)).toMatch(/verifier\.timeout_sec: must be at most 2147483 s/);
  });

  it('walks tests/, environment/ and solution/ at load: no linked directory, no link out, no FIFO', () => {
    const linkedTests = task({ 'instruction.md': 'x', 'task.toml': TASK_TOML });
    mkdirSync(join(root, 'elsewhere'), { recursive: true });
    writeFileSync(join(root, 'elsewhere', 'test.sh'), 'true\n');
    symlinkSync(join(root, 'elsewhere'), join(linkedTests, 'tests'));
    expect(refusal(linkedTests)).toMatch(/tests is a symbolic link|tests must be a directory/);

    const linkOut = task({ ...base, 'instruction.md': 'x', 'environment/data/a.txt': 'a' });
    symlinkSync(hostFile, join(linkOut, 'environment', 'data', 'leak'));
    expect(refusal(linkOut)).toMatch(/environment\/data\/leak is a symbolic link that points outside/);
    const upOut = task({ ...base, 'instruction.md': 'x', 'solution/solve.sh': 'true\n' });
    symlinkSync('../../host.txt', join(upOut, 'solution', 'up'));
    expect(refusal(upOut)).toMatch(/solution\/up is a symbolic link that points outside/);

    const fifo = task({ ...base, 'instruction.md': 'x', 'environment/a.txt': 'a' });
    execFileSync('mkfifo', [join(fifo, 'environment', 'pipe')]);
    expect(refusal(fifo)).toMatch(/environment\/pipe is a FIFO/);

    const dirTest = task({ 'instruction.md': 'x', 'task.toml': TASK_TOML, 'tests/test.sh/inner': 'x' });
    expect(refusal(dirTest)).toMatch(/tests\/test\.sh must be a regular file/);
  });

  it('accepts a relative link that stays inside its tree', () => {
    const t = task({ ...base, 'instruction.md': 'x', 'environment/data/a.txt': 'a' });
    symlinkSync('data/a.txt', join(t, 'environment', 'alias'));
    expect(loadHarborTask(t).environmentDir).toBe(join(t, 'environment'));
  });
});
