import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withoutNativeNotice } from './testing/spawn-crl.ts';

const ROOT = realpathSync(new URL('../..', import.meta.url).pathname);
const CRL = join(ROOT, 'bin', 'crl');

function run(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  const r = spawnSync(cmd, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: withoutNativeNotice(r.stderr) };
}

/** bin/crl resolves tsx from the package, not the current directory (docs/cli.md, "Installing"). */
describe('bin/crl from anywhere', () => {
  it('runs from / by its absolute path', () => {
    const r = run(CRL, ['--help'], { cwd: '/' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: crl');
    const v = run(CRL, ['--version'], { cwd: '/' });
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect([v.code, v.stdout.trim()]).toEqual([0, pkg.version]);
  });

  it('runs through a symlink on PATH, as npm link and a global install put it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-link-'));
    mkdirSync(join(dir, 'bin'));
    symlinkSync(CRL, join(dir, 'bin', 'crl'));
    const r = run('crl', ['run', '--help'], {
      cwd: dir,
      env: { ...process.env, PATH: `${join(dir, 'bin')}${delimiter}${process.env.PATH ?? ''}` },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: crl run');
  });

  it('runs as `crl` after a global install (npm install -g), from /', () => {
    const prefix = mkdtempSync(join(tmpdir(), 'crl-global-'));
    const install = run(
      'npm',
      ['install', '--global', '--prefix', prefix, '--offline', '--ignore-scripts', '--no-audit', '--no-fund', ROOT],
      { cwd: '/' },
    );
    expect(install.code, install.stderr).toBe(0);
    const r = run('crl', ['train', '--help'], {
      cwd: '/',
      env: { ...process.env, PATH: `${join(prefix, 'bin')}${delimiter}${process.env.PATH ?? ''}` },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Usage: crl train');
  });

  it('runs through npx in another project that installed this package', () => {
    const project = mkdtempSync(join(tmpdir(), 'crl-npx-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-crl', version: '1.0.0', private: true }));
    // A folder install links the checkout into node_modules and its bin into node_modules/.bin.
    const install = run(
      'npm',
      ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', ROOT],
      { cwd: project },
    );
    expect(install.code, install.stderr).toBe(0);
    const r = run('npx', ['--offline', '--no-install', 'crl', 'eval', '--help'], { cwd: project });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Usage: crl eval');
  });
});
