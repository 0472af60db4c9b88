import { spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../util/testing/wait-for.ts';
import { nativeStatus } from './native.ts';

/**
 * scripts/build-native.mjs against a broken compiler, in a copy of the repository's build inputs (the
 * real native/build is never touched): the addon in place stays byte for byte and inode for inode, and
 * the failure is loud. node-gyp really runs; only the compiler is replaced (CXX), so each case fails
 * within seconds instead of compiling.
 */
const repo = resolve(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'crl-build-native-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function copyOfRepo(name: string): { root: string; addon: string; failure: string } {
  const root = join(scratch, name);
  mkdirSync(join(root, 'scripts'), { recursive: true });
  copyFileSync(join(repo, 'scripts', 'build-native.mjs'), join(root, 'scripts', 'build-native.mjs'));
  copyFileSync(join(repo, 'package.json'), join(root, 'package.json'));
  cpSync(join(repo, 'native', 'binding.gyp'), join(root, 'native', 'binding.gyp'));
  cpSync(join(repo, 'native', 'src'), join(root, 'native', 'src'), { recursive: true });
  symlinkSync(join(repo, 'node_modules'), join(root, 'node_modules'));
  mkdirSync(join(root, 'native', 'build', 'Release'), { recursive: true });
  return {
    root,
    addon: join(root, 'native', 'build', 'Release', 'crl_native.node'),
    failure: join(root, 'native', 'build', 'BUILD_FAILED.txt'),
  };
}

async function build(root: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'scripts', 'build-native.mjs')], {
    cwd: root,
    env: { ...process.env, CRL_NATIVE: '1', CRL_NATIVE_REBUILD: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, stderr };
}

const fingerprint = (path: string) => ({ ino: statSync(path).ino, bytes: readFileSync(path).toString('base64') });
const stagingLeft = (root: string) => readdirSync(join(root, 'native')).filter((n) => n.startsWith('.staging-'));

/** Pids whose command line contains `marker`. */
function processesWithArg(marker: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false; // gone meanwhile
      }
    });
}

describe('scripts/build-native.mjs when the build fails', () => {
  it.skipIf(!nativeStatus().available)(
    'keeps a working addon untouched, warns loudly, records no failure, leaves no staging copy',
    async () => {
      const { root, addon, failure } = copyOfRepo('working');
      copyFileSync(join(repo, 'native', 'build', 'Release', 'crl_native.node'), addon);
      const cpu = join(repo, 'native', 'build', 'Release', 'cpu.json');
      if (existsSync(cpu)) copyFileSync(cpu, join(root, 'native', 'build', 'Release', 'cpu.json'));
      const before = fingerprint(addon);
      const r = await build(root, { CXX: 'false' });
      expect(r.code, r.stderr).toBe(0); // an install never fails on the native build
      expect(r.stderr).toMatch(/WARNING: the native kernels were NOT built/);
      expect(r.stderr).toMatch(/kept: the existing addon native\/build\/Release\/crl_native\.node .*still loads/);
      expect(fingerprint(addon)).toEqual(before);
      expect(existsSync(failure)).toBe(false);
      expect(stagingLeft(root)).toEqual([]);
    },
  );

  const repoCpu = join(repo, 'native', 'build', 'Release', 'cpu.json');
  const recorded = existsSync(repoCpu) && 'sources' in (JSON.parse(readFileSync(repoCpu, 'utf8')) as object);
  it.skipIf(!nativeStatus().available || !recorded)(
    'skips the build (so the broken compiler is never called) when the working addon is built from these sources',
    async () => {
      const { root, addon, failure } = copyOfRepo('current');
      copyFileSync(join(repo, 'native', 'build', 'Release', 'crl_native.node'), addon);
      copyFileSync(repoCpu, join(root, 'native', 'build', 'Release', 'cpu.json'));
      writeFileSync(failure, 'stale');
      const before = fingerprint(addon);
      const r = await build(root, { CXX: 'false', CRL_NATIVE_REBUILD: '0' });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/WARNING/);
      expect(fingerprint(addon)).toEqual(before);
      expect(existsSync(failure)).toBe(false);
      // One changed source file, and the same run builds (and here fails, loudly).
      writeFileSync(
        join(root, 'native', 'src', 'addon.cc'),
        readFileSync(join(root, 'native', 'src', 'addon.cc'), 'utf8') + '\n',
      );
      const changed = await build(root, { CXX: 'false', CRL_NATIVE_REBUILD: '0' });
      expect(changed.stderr).toMatch(/WARNING: the native kernels were NOT built/);
      expect(fingerprint(addon)).toEqual(before);
    },
  );

  it('leaves a file that is no working addon in place, but records the failure for the loader', async () => {
    const { root, addon, failure } = copyOfRepo('broken');
    writeFileSync(addon, 'not an addon');
    const r = await build(root, { CXX: 'false' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/WARNING: the native kernels were NOT built/);
    expect(r.stderr).toMatch(/no working native addon remains: crl will use the TypeScript kernels/);
    expect(readFileSync(addon, 'utf8')).toBe('not an addon');
    expect(readFileSync(failure, 'utf8')).toMatch(/failed/);
    expect(stagingLeft(root)).toEqual([]);
  });

  it('stops a build that runs past its time limit, compiler included, and says so', async () => {
    const { root, failure } = copyOfRepo('slow');
    const marker = `98760${process.pid}`;
    const slowCompiler = join(root, 'slow-cxx');
    writeFileSync(slowCompiler, `#!/bin/sh\nexec sleep ${marker}\n`);
    chmodSync(slowCompiler, 0o755);
    const r = await build(root, { CXX: slowCompiler, CRL_NATIVE_BUILD_TIMEOUT_SEC: '3' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/why: the build did not finish within 3 s and was stopped/);
    expect(readFileSync(failure, 'utf8')).toMatch(/did not finish within 3 s/);
    expect(stagingLeft(root)).toEqual([]);
    await waitFor(() => processesWithArg(marker).length === 0, { what: 'the stopped compiler to exit' });
  });
});
