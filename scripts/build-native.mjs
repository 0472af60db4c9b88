#!/usr/bin/env node
// Builds the native kernels (native/) with node-gyp at `npm install` time.
// Never removes a working addon before its replacement exists: it builds in a private staging
// directory under native/ and renames the result over native/build/Release/crl_native.node (atomic
// on one filesystem; a process that has already loaded the old file keeps it). Other crl processes
// therefore never fall back to the TypeScript kernels because a rebuild is under way.
// Never fails the install: on any error or timeout it prints a loud warning on stderr, keeps the old
// addon if it still loads, and records why in native/build/BUILD_FAILED.txt only when no working
// addon remains (read by src/tensor/native.ts, which then warns once and uses the TypeScript
// kernels); exit status 0 either way. See docs/decisions/0002-native-kernels.md.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nativeDir = join(root, 'native');
const releaseDir = join(nativeDir, 'build', 'Release');
const addonPath = join(releaseDir, 'crl_native.node');
const failurePath = join(nativeDir, 'build', 'BUILD_FAILED.txt');
const logPath = join(nativeDir, 'build', 'last-build.log');
// Generous: on a loaded shared machine the compile can take minutes, and a build stopped early
// costs every later run the 50x slower kernels. CRL_NATIVE_BUILD_TIMEOUT_SEC overrides it.
const TIMEOUT_MS = 1000 * (Number(process.env.CRL_NATIVE_BUILD_TIMEOUT_SEC) || 900);
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

/** The interface version the sources in native/ build (the loader refuses any other). */
function sourceAbi() {
  const m = /kAbiVersion\s*=\s*(\d+)/.exec(readFileSync(join(nativeDir, 'src', 'addon.cc'), 'utf8'));
  return m ? Number(m[1]) : null;
}

/**
 * Whether the addon now in place still works here: it loads (in a child process, since a build for
 * another CPU can die with SIGILL) and has the interface these sources build.
 */
function workingAddon() {
  if (!existsSync(addonPath)) return false;
  // The loader refuses an addon whose cpu.json names another CPU (src/tensor/native.ts); so does this.
  try {
    const built = JSON.parse(readFileSync(join(releaseDir, 'cpu.json'), 'utf8'));
    const portable = built.march !== undefined && built.march !== 'native';
    const model = cpus()[0]?.model ?? 'unknown';
    if (built.arch !== process.arch || (!portable && (built.model !== model || (built.isa ?? '') !== isaFlags())))
      return false;
  } catch {
    // no cpu.json (or unreadable): the loader does not check either
  }
  const probe = spawnSync(
    process.execPath,
    ['-e', 'process.stdout.write(String(require(process.argv[1]).info().abi ?? 1))', addonPath],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return probe.status === 0 && Number(probe.stdout) === sourceAbi();
}

/** What the addon is built from: the sources, the build file, the target CPU. */
function sourcesDigest(march) {
  const hash = createHash('sha256').update(`${march} ${process.arch}\n`);
  hash.update(readFileSync(join(nativeDir, 'binding.gyp')));
  for (const name of readdirSync(join(nativeDir, 'src')).sort())
    hash.update(`\n${name}\n`).update(readFileSync(join(nativeDir, 'src', name)));
  return hash.digest('hex').slice(0, 16);
}

/** Runs node-gyp in its own process group, so a timeout can stop make and the compilers too. */
function runNodeGyp(args, cwd) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ error, log, status: null, timedOut });
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ error: null, log, status, timedOut });
    });
  });
}

function fail(reason, log = '') {
  mkdirSync(dirname(failurePath), { recursive: true });
  writeFileSync(logPath, `${reason}\n\n${log}`);
  const kept = workingAddon();
  if (kept) rmSync(failurePath, { force: true });
  else writeFileSync(failurePath, `${reason}\n\n${log}`);
  const built = kept ? ` (built ${statSync(addonPath).mtime.toISOString()})` : '';
  const bar = '='.repeat(78);
  console.error(
    [
      bar,
      'compaction-rl: WARNING: the native kernels were NOT built.',
      `  why: ${reason}`,
      kept
        ? `  kept: the existing addon native/build/Release/crl_native.node${built} still loads and is used;`
        : '  no working native addon remains: crl will use the TypeScript kernels (~50x slower training).',
      kept ? '        it was built before this attempt, so it may predate changes to native/src.' : null,
      `  log:  native/build/last-build.log${kept ? '' : ' (and native/build/BUILD_FAILED.txt)'}`,
      '  retry: node scripts/build-native.mjs',
      bar,
    ]
      .filter((l) => l !== null)
      .join('\n'),
  );
  process.exit(0);
}

// The default is portable: every x86-64 CPU with AVX2 and FMA runs the same kernels (the same
// panel widths and summation order), so a seed gives the same numbers on every such machine, with
// or without AVX-512 (README's results need this build). CRL_NATIVE_MARCH=native builds for this
// CPU alone (AVX-512 kernels where it has them: faster, other numbers); any other value is passed
// to -march. A CPU without the x86-64-v3 set, or another architecture, gets its own build.
const march = process.env.CRL_NATIVE_MARCH || defaultMarch();
process.env.CRL_NATIVE_MARCH = march; // binding.gyp reads it

function defaultMarch() {
  if (process.arch !== 'x64') return 'native';
  let flags = new Set();
  try {
    const line =
      readFileSync('/proc/cpuinfo', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('flags')) ?? '';
    flags = new Set(line.split(':')[1]?.trim().split(/\s+/) ?? []);
  } catch {
    return 'native';
  }
  const v3 = ['avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave'];
  return v3.every((f) => flags.has(f)) ? 'x86-64-v3' : 'native';
}
if (process.env.CRL_NATIVE === '0') {
  console.log('compaction-rl: CRL_NATIVE=0, skipping the native build');
  process.exit(0);
}
// `npx crl` inside the repository installs the package into npx's cache, which runs this install
// script: skip the build when the addon in place is built from these very sources and still loads.
const digest = sourcesDigest(march);
if (process.env.CRL_NATIVE_REBUILD !== '1') {
  let built = {};
  try {
    built = JSON.parse(readFileSync(join(releaseDir, 'cpu.json'), 'utf8'));
  } catch {
    // no record: build
  }
  if (built.sources === digest && workingAddon()) {
    rmSync(failurePath, { force: true });
    console.log('compaction-rl: native kernels up to date (CRL_NATIVE_REBUILD=1 rebuilds them anyway)');
    process.exit(0);
  }
}
const nodeGyp = findNodeGyp();
if (!nodeGyp) fail('node-gyp not found');
// A private copy of the sources (under native/, so the final rename stays on one filesystem):
// node-gyp's rebuild empties <dir>/build first, which must never be the build other processes load.
const staging = join(nativeDir, `.staging-${process.pid}`);
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging);
cpSync(join(nativeDir, 'binding.gyp'), join(staging, 'binding.gyp'));
cpSync(join(nativeDir, 'src'), join(staging, 'src'), { recursive: true });
const cleanUp = () => rmSync(staging, { recursive: true, force: true });
process.on('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.on(signal, () => {
    cleanUp();
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
  });
const args = [nodeGyp, 'rebuild', '--directory', staging];
const nodeDir = localNodeDir();
if (nodeDir) args.push(`--nodedir=${nodeDir}`);
const res = await runNodeGyp(args, staging);
const log = res.log;
if (res.error) fail(`node-gyp did not run: ${res.error.message}`, log);
if (res.timedOut) fail(`the build did not finish within ${TIMEOUT_MS / 1000} s and was stopped`, log);
if (res.status !== 0) fail(summarize(log), log);
const builtAddon = join(staging, 'build', 'Release', 'crl_native.node');
if (!existsSync(builtAddon)) fail('node-gyp produced no crl_native.node', log);
// -march=native code can crash (SIGILL) on another CPU; the loader compares this signature. It goes
// in first: it describes this machine, so a process reading it beside the old addon loses nothing.
mkdirSync(releaseDir, { recursive: true });
const cpuStaged = join(staging, 'cpu.json');
writeFileSync(
  cpuStaged,
  JSON.stringify({ march, arch: process.arch, model: cpus()[0]?.model ?? 'unknown', isa: isaFlags(), sources: digest }),
);
renameSync(cpuStaged, join(releaseDir, 'cpu.json'));
renameSync(builtAddon, addonPath);
rmSync(failurePath, { force: true });
writeFileSync(logPath, log);
console.log('compaction-rl: native kernels built (native/build/Release/crl_native.node)');
