import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
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

/** bin/load-cli.mjs: the cached bundle is what runs, and a changed source rebuilds it (docs/cli.md). */
describe('the CLI bundle', () => {
  // A checkout of its own (sources copied, packages and the native addon linked), so that a source
  // can be edited without touching the one the other tests run.
  function checkout(): string {
    const dir = mkdtempSync(join(tmpdir(), 'crl-bundle-'));
    cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true, filter: (p) => !p.endsWith('.test.ts') });
    cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    for (const linked of ['node_modules', 'native', 'python']) symlinkSync(join(ROOT, linked), join(dir, linked));
    return dir;
  }

  it('is built on first use, reused while the sources are unchanged, rebuilt when one changes', () => {
    const dir = checkout();
    const crl = join(dir, 'bin', 'crl');
    const bundle = join(dir, 'build', 'cli', 'crl.mjs');
    const first = run(crl, ['--help'], { cwd: '/' });
    expect([first.code, first.stderr]).toEqual([0, '']);
    expect(first.stdout).toContain('train and run long-horizon agents');
    const built = statSync(bundle).mtimeMs;
    expect(readFileSync(bundle, 'utf8')).toContain('train and run long-horizon agents');

    expect(run(crl, ['--version'], { cwd: '/' }).code).toBe(0);
    expect(statSync(bundle).mtimeMs).toBe(built);

    const main = join(dir, 'src', 'cli', 'main.ts');
    writeFileSync(main, readFileSync(main, 'utf8').replace('train and run long-horizon agents', 'EDITED DESCRIPTION'));
    const edited = run(crl, ['--help'], { cwd: '/' });
    expect([edited.code, edited.stderr]).toEqual([0, '']);
    expect(edited.stdout).toContain('EDITED DESCRIPTION');
    expect(readFileSync(bundle, 'utf8')).toContain('EDITED DESCRIPTION');
  });

  it('gives the same answers as the sources run through tsx (CRL_NO_BUNDLE=1)', () => {
    for (const args of [['train', '--help'], ['--version'], ['eval', '--no-such-flag']]) {
      const bundled = run(CRL, args, { cwd: '/' });
      const direct = run(CRL, args, { cwd: '/', env: { ...process.env, CRL_NO_BUNDLE: '1' } });
      expect(bundled).toEqual(direct);
    }
  });
});
