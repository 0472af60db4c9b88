#!/usr/bin/env node
// Builds the native kernels (native/) with node-gyp at `npm install` time.
// Never fails the install: on any error it records why in native/build/BUILD_FAILED.txt (read by
// src/tensor/native.ts, which then warns once and uses the TypeScript kernels) and exits 0.
// See docs/decisions/0002-native-kernels.md.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nativeDir = join(root, 'native');
const failurePath = join(nativeDir, 'build', 'BUILD_FAILED.txt');
const TIMEOUT_MS = 300_000;
// Keep in sync with src/tensor/native.ts.
const ISA_FLAGS = [
  'avx',
  'avx2',
  'fma',
  'f16c',
  'bmi2',
  'avx512f',
  'avx512dq',
  'avx512bw',
  'avx512vl',
  'avx512vnni',
  'avx512_bf16',
];

/** ISA flags that -march=native may use (Linux; elsewhere the CPU model string alone). */
function isaFlags() {
  try {
    const line =
      readFileSync('/proc/cpuinfo', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('flags')) ?? '';
    const have = new Set(line.split(':')[1]?.trim().split(/\s+/) ?? []);
    return ISA_FLAGS.filter((f) => have.has(f)).join(' ');
  } catch {
    return '';
  }
}

/** node-gyp from our devDependencies, else the copy bundled with npm (production installs). */
function findNodeGyp() {
  try {
    return createRequire(join(root, 'package.json')).resolve('node-gyp/bin/node-gyp.js');
  } catch {
    const npmCli = process.env.npm_execpath;
    const bundled = npmCli && join(dirname(npmCli), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    return bundled && existsSync(bundled) ? bundled : null;
  }
}

/** Headers shipped with this Node, so the build needs no download (offline machines). */
function localNodeDir() {
  const prefix = dirname(dirname(process.execPath));
  const ok = ['node.h', 'common.gypi'].every((f) => existsSync(join(prefix, 'include', 'node', f)));
  return ok ? prefix : null;
}

/** The most telling line of a failed build log (compiler error, missing tool, ...). */
function summarize(log) {
  const lines = log
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const pick =
    lines.find(
      (l) =>
        /error:|not found|No such file|command not found|cannot find/i.test(l) &&
        !/^gyp ERR! (cwd|node -v|node-gyp -v|not ok|System)/.test(l),
    ) ??
    lines.findLast((l) => l.startsWith('gyp ERR!')) ??
    lines.at(-1) ??
    'unknown error';
  return pick.replace(/^gyp ERR! (stack )?/, '').slice(0, 300);
}

function fail(reason, log = '') {
  mkdirSync(dirname(failurePath), { recursive: true });
  writeFileSync(failurePath, `${reason}\n\n${log}`);
  console.warn(
    `compaction-rl: native kernels not built (${reason}); the TypeScript kernels will be used (~50x slower training).`,
  );
  process.exit(0);
}

// CRL_NATIVE_MARCH=x86-64-v3 (say) builds a portable addon, e.g. for a container image.
const march = process.env.CRL_NATIVE_MARCH || 'native';
rmSync(failurePath, { force: true });
if (process.env.CRL_NATIVE === '0') {
  console.log('compaction-rl: CRL_NATIVE=0, skipping the native build');
  process.exit(0);
}
const nodeGyp = findNodeGyp();
if (!nodeGyp) fail('node-gyp not found');
const args = [nodeGyp, 'rebuild', '--directory', nativeDir];
const nodeDir = localNodeDir();
if (nodeDir) args.push(`--nodedir=${nodeDir}`);
const res = spawnSync(process.execPath, args, { cwd: nativeDir, encoding: 'utf8', timeout: TIMEOUT_MS });
const log = `${res.stdout ?? ''}\n${res.stderr ?? ''}`;
if (res.error) fail(`node-gyp did not run: ${res.error.message}`, log);
if (res.status !== 0) fail(summarize(log), log);
if (!existsSync(join(nativeDir, 'build', 'Release', 'crl_native.node')))
  fail('node-gyp produced no crl_native.node', log);
// -march=native code can crash (SIGILL) on another CPU; the loader compares this signature.
writeFileSync(
  join(nativeDir, 'build', 'Release', 'cpu.json'),
  JSON.stringify({ march, arch: process.arch, model: cpus()[0]?.model ?? 'unknown', isa: isaFlags() }),
);
console.log('compaction-rl: native kernels built (native/build/Release/crl_native.node)');
