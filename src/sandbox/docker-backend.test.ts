import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../util/testing/wait-for.ts';
import type { SandboxSession, SandboxSpec } from './backend.ts';
import { dockerBackend, sweepStaleContainers } from './docker-backend.ts';
import { OWNER_LABEL, SANDBOX_LABEL } from './docker-cli.ts';
import { runLabelArgs } from './docker-run-scope.ts';
import { ownerTag } from './stale-dirs.ts';
import { dockerAvailable, TEST_BASE_IMAGE } from './testing/docker-available.ts';

const available = dockerAvailable('docker sandbox tests');
const host = mkdtempSync(join(tmpdir(), 'crl-docker-test-'));
afterAll(() => rmSync(host, { recursive: true, force: true }));

const SPEC: SandboxSpec = {
  image: TEST_BASE_IMAGE,
  dirs: [
    { path: '/app', writable: true },
    { path: '/logs', writable: true },
  ],
  workdir: '/app',
  emptyDirs: ['/logs/verifier'],
  limits: { commandTimeoutSec: 20, memoryMb: 256, processes: 64 },
};

async function withBox<T>(f: (s: SandboxSession) => Promise<T>, spec: Partial<SandboxSpec> = {}): Promise<T> {
  const s = await dockerBackend().start({ ...SPEC, ...spec });
  try {
    return await f(s);
  } finally {
    await s.close();
  }
}

/**
 * Containers (running or not) whose owner label names process `pid`: other test files make
 * containers on the same daemon at the same time, so only one's own are counted.
 */
function ownedBy(pid: number): string[] {
  const r = spawnSync(
    'docker',
    ['ps', '-a', '--filter', `label=${SANDBOX_LABEL}`, '--format', `{{.ID}} {{.Label "${OWNER_LABEL}"}}`],
    { encoding: 'utf8' },
  );
  return r.stdout
    .split('\n')
    .filter((l) => l.includes(`/${pid}.`))
    .map((l) => l.split(' ')[0]!);
}

describe.skipIf(!available)('docker sandbox: one persistent shell in a container', () => {
  it('keeps the working directory and variables, stops a command at its timeout and keeps the shell', async () => {
    await withBox(async (s) => {
      expect(await s.run('echo hi; pwd')).toMatchObject({ text: 'hi\n/app\n', exitCode: 0 });
      await s.run('cd /tmp && X=5');
      expect((await s.run('echo $X; pwd')).text).toBe('5\n/tmp\n');
      const slow = await s.run('sleep 60; echo never', { timeoutMs: 500 });
      expect(slow.timedOut).toBe(true);
      expect(slow.text).not.toContain('never');
      expect((await s.run('echo $X')).text).toBe('5\n');
      await s.run('kill -9 -1'); // everything but pid 1 (the supervisor): the shell comes back
      expect((await s.run('echo alive')).text).toContain('alive');
    });
  });

  it('lets a command print 20 MB and finish, keeping only its head and tail', async () => {
    await withBox(
      async (s) => {
        const r = await s.run('head -c 20000000 /dev/zero | tr "\\0" x; echo; echo done-marker');
        expect(r.exitCode).toBe(0);
        expect(r.outputKilled).toBe(false);
        expect(r.totalBytes).toBeGreaterThan(20_000_000);
        expect(r.text.length).toBeLessThan(5000);
        expect(r.text).toContain('done-marker');
      },
      { limits: { ...SPEC.limits, outputBytes: 2048 } },
    );
  });

  it('runs the verifier in a fresh shell after killing what the agent left, with the tests copied in then', async () => {
    writeFileSync(join(host, 'test.sh'), 'echo 1 > /logs/verifier/reward.txt\n');
    await withBox(async (s) => {
      await s.run('(sleep 300 &) ; f() { echo fake; }; echo 0 > /logs/verifier/reward.txt');
      await s.copyIn({ from: null, to: '/logs/verifier' });
      await s.copyIn({ from: host, to: '/tests' });
      const v = await s.runFresh(
        'type f >/dev/null 2>&1 && echo agent-function; grep -l "^sleep" /proc/[0-9]*/comm 2>/dev/null | wc -l; bash /tests/test.sh; pwd',
        { timeoutMs: 20_000 },
      );
      expect(v.text).not.toContain('agent-function');
      expect(v.text).toMatch(/^0$/m); // no sleep left
      expect(v.text).toContain('/app');
      expect((await s.readFile('/logs/verifier/reward.txt', { maxBytes: 100 }))?.toString()).toBe('1\n');
    });
  });

  it('reads a file only when it is regular, small enough and reached through no link', async () => {
    await withBox(async (s) => {
      await s.run(
        'ln -s /etc/passwd /app/link; mkdir -p /app/real; ln -s /app/real /app/dirlink; echo x > /app/real/f',
      );
      expect(await s.readFile('/app/link', { maxBytes: 1 << 20 })).toBeNull();
      expect(await s.readFile('/app/dirlink/f', { maxBytes: 100 })).toBeNull();
      expect((await s.readFile('/app/real/f', { maxBytes: 100 }))?.toString()).toBe('x\n');
      expect(await s.readFile('/app/real/f', { maxBytes: 1 })).toBeNull();
      expect(await s.readFile('/absent', { maxBytes: 100 })).toBeNull();
    });
  });

  it('sees no host path and no network, and the daemon enforces memory and processes', async () => {
    const marker = join(host, `host-marker-${process.pid}`);
    writeFileSync(marker, 'secret');
    await withBox(async (s) => {
      expect((await s.run(`cat ${marker} 2>&1; ls ${host} 2>&1 | head -1`)).text).toMatch(/No such file/);
      const net = await s.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
      expect(net.text.trim().split('\n')).toEqual(['lo']);
      const mem = await s.run('python3 -c "b = bytearray(512 * 1024 * 1024); print(len(b))"; echo rc=$?');
      expect(mem.text).not.toMatch(/^536870912$/m);
      expect(mem.text).toMatch(/rc=(137|1)\b/);
      // os.fork fails with EAGAIN at the pids limit (64, the supervisor and shell included).
      const fork = await s.run(
        'python3 -c "import os, time\nn = 0\ntry:\n  while n < 500:\n    if os.fork() == 0:\n      time.sleep(5); os._exit(0)\n    n += 1\nexcept OSError: pass\nprint(n)"; kill -9 $(ls /proc | grep "^[0-9]") 2>/dev/null; true',
      );
      const forked = Number(fork.text.trim().split('\n')[0]);
      expect(forked).toBeGreaterThan(10);
      expect(forked).toBeLessThan(64);
    });
  });

  it('leaves no container behind when closed, or when the process that owns it is killed', async () => {
    await withBox(async (s) => {
      expect(ownedBy(process.pid).length).toBe(1);
      await s.run('true');
    });
    await waitFor(() => ownedBy(process.pid).length === 0, { timeoutMs: 30_000, what: 'the closed container gone' });
    // A child process starts a sandbox and is killed with SIGKILL while it holds it.
    const script = `
      import { dockerBackend } from ${JSON.stringify(new URL('./docker-backend.ts', import.meta.url).pathname)};
      const s = await dockerBackend().start(${JSON.stringify(SPEC)});
      await s.run('true');
      process.stdout.write('started\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor(() => out.includes('started'), { timeoutMs: 60_000, what: 'the child sandbox started' });
      expect(ownedBy(child.pid!).length).toBe(1);
    } finally {
      child.kill('SIGKILL');
    }
    await waitFor(() => ownedBy(child.pid!).length === 0, {
      timeoutMs: 60_000,
      what: 'the killed owner’s container gone',
    });
  });

  it('the sweep removes the stopped containers of dead owners and keeps those of live ones', async () => {
    // Owners: one process that has exited and one that still runs, both tagged while alive.
    const dead = spawn('sleep', ['60']);
    const live = spawn('sleep', ['60']);
    if (dead.pid === undefined || live.pid === undefined) throw new Error('sleep did not start');
    const deadTag = ownerTag(dead.pid);
    const liveTag = ownerTag(live.pid);
    const exited = new Promise((resolve) => dead.on('exit', resolve));
    dead.kill('SIGKILL');
    await exited;
    // What --rm cannot clean: containers that exist without a process of their owner (a daemon
    // restart, a `docker create` that never ran). Made here without --rm, as a killed owner leaves them.
    const make = (tag: string) =>
      spawnSync(
        'docker',
        [
          'create',
          '--label',
          `${SANDBOX_LABEL}=1`,
          '--label',
          `${OWNER_LABEL}=${hostname()}/${tag}`,
          ...runLabelArgs(),
        ].concat([TEST_BASE_IMAGE, 'true']),
        { encoding: 'utf8' },
      ).stdout.trim();
    const deadBox = make(deadTag);
    const liveBox = make(liveTag);
    try {
      expect(ownedBy(dead.pid)).toHaveLength(1);
      const removed = await sweepStaleContainers();
      expect(removed.some((id) => deadBox.startsWith(id))).toBe(true);
      expect(ownedBy(dead.pid)).toEqual([]);
      expect(ownedBy(live.pid)).toHaveLength(1);
    } finally {
      live.kill('SIGKILL');
      spawnSync('docker', ['rm', '-f', deadBox, liveBox], { stdio: 'ignore' });
    }
  });
});

describe.skipIf(!available)('docker sandbox: refuses what it cannot run', () => {
  it('names the problem when the spec has no image or the image does not exist', async () => {
    const { image: _image, ...noImage } = SPEC;
    await expect(dockerBackend().start(noImage)).rejects.toThrow(/needs an image/);
    await expect(dockerBackend().start({ ...SPEC, image: 'crl-test/absent:none' })).rejects.toThrow(/did not start/);
  });
});
