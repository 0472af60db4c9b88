import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JobRefused } from '../../queue/job-refusal.ts';
import { checkEngines, engineKey, taskDirInRoot } from './worker-bounds.ts';

describe("a worker's bounds", () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'crl-bounds-')));
  const root = join(base, 'root');
  mkdirSync(join(root, 'one'), { recursive: true });
  mkdirSync(join(base, 'secret-task'), { recursive: true });
  symlinkSync(join(base, 'secret-task'), join(root, 'link-out'));
  symlinkSync(join(root, 'one'), join(root, 'link-in'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  const refusal = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(JobRefused);
      return (e as Error).message;
    }
    throw new Error('not refused');
  };

  it('takes a folder under the root, as its real path (a link inside the root included)', () => {
    expect(taskDirInRoot(join(root, 'one'), root)).toBe(join(root, 'one'));
    expect(taskDirInRoot(join(root, 'link-in'), root)).toBe(join(root, 'one'));
    expect(taskDirInRoot(join(root, 'one', '..', 'one'), root)).toBe(join(root, 'one'));
  });

  it('refuses a folder outside the root, whether named directly, through .. or through a link', () => {
    expect(refusal(() => taskDirInRoot(join(base, 'secret-task'), root))).toMatch(/outside --task-root/);
    expect(refusal(() => taskDirInRoot(join(root, '..', 'secret-task'), root))).toMatch(/outside --task-root/);
    expect(refusal(() => taskDirInRoot(join(root, 'link-out'), root))).toMatch(/leads outside --task-root .* link/);
    expect(refusal(() => taskDirInRoot(`${root}-sibling`, root))).toMatch(/outside --task-root/);
    expect(refusal(() => taskDirInRoot('one', root))).toMatch(/not an absolute path/);
    expect(refusal(() => taskDirInRoot(join(root, 'missing'), root))).toMatch(/does not exist under --task-root/);
    expect(refusal(() => taskDirInRoot(join(root, 'one'), null))).toMatch(/takes none: start it with --task-root/);
  });

  it('engines: any without an allow list; with one, only those (a trailing slash does not matter)', () => {
    expect(() => checkEngines(['http://evil:1'], null)).not.toThrow();
    const allowed = new Set(['http://127.0.0.1:30000/', 'http://10.0.0.2:30000'].map(engineKey));
    expect(() => checkEngines(['http://127.0.0.1:30000', 'http://10.0.0.2:30000/'], allowed)).not.toThrow();
    expect(refusal(() => checkEngines(['http://127.0.0.1:30000', 'http://127.0.0.1:9'], allowed))).toMatch(
      /may not reach: http:\/\/127\.0\.0\.1:9 /,
    );
  });
});
