/**
 * What a command inside the sandbox must not reach: the host's files, network, processes.
 * One file over 300 lines on purpose: every escape attempt shares the same sandbox fixtures and
 * host-side probes, and reading them together shows what is and is not covered.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxLimitsInput } from './limits.ts';
import { Sandbox } from './supervised-shell.ts';
import { parentOf, processesInNamespace, processesWithArg, sandboxPidNamespace } from './testing/host-processes.ts';
import { sandboxAvailable } from './testing/sandbox-available.ts';
import { waitFor } from '../util/testing/wait-for.ts';

/**
 * Escape attempts, each run by real bash in a real sandbox; every test fails if the sandbox lets
 * the attempt through (docs/sandbox.md lists what is enforced and how).
 */
const available = sandboxAvailable('sandbox security tests');

async function inSandbox<T>(f: (s: Sandbox) => Promise<T>, limits: SandboxLimitsInput = {}): Promise<T> {
  const s = await Sandbox.start({
    dirs: [
      { path: '/app', writable: true },
      { path: '/root', writable: true },
    ],
    workdir: '/app',
    limits: { commandTimeoutSec: 20, ...limits },
  });
  try {
    return await f(s);
  } finally {
    await s.close();
  }
}

const secret = randomBytes(12).toString('hex');
const projectMarker = join(process.cwd(), `.crl-sandbox-marker-${secret}`);
const homeMarker = join(homedir(), `.crl-sandbox-marker-${secret}`);

/** Polls until `f` holds; the deadline is generous because a passing check returns at once. */
const readCmd = (p: number): string => {
  try {
    return readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
};

async function until(f: () => boolean, ms = 20_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) if (f()) return true;
  return f();
}

describe.skipIf(!available)('sandbox: escape attempts', () => {
  beforeAll(() => {
    writeFileSync(projectMarker, `project ${secret}\n`);
    writeFileSync(homeMarker, `home ${secret}\n`);
  });
  afterAll(() => {
    rmSync(projectMarker, { force: true });
    rmSync(homeMarker, { force: true });
  });

  it('cannot connect to a server on the host loopback (TCP), nor reach any other address', async () => {
    let connections = 0;
    const server = createServer((sock) => {
      connections++;
      sock.end('hello from the host\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const r = await inSandbox((s) =>
        s.run(
          `(exec 3<>/dev/tcp/127.0.0.1/${port} && echo CONNECTED && cat <&3); ` +
            `curl -s -m 3 http://127.0.0.1:${port}/ && echo CONNECTED; ` +
            `curl -s -m 3 http://10.0.2.2:${port}/ && echo CONNECTED; ip -o link 2>/dev/null | wc -l`,
        ),
      );
      expect(r.text).not.toContain('CONNECTED');
      expect(r.text).not.toContain('hello from the host');
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('cannot resolve names or send datagrams to the host (no DNS path out)', async () => {
    let datagrams = 0;
    let controlArrived = false;
    const udp = createSocket('udp4');
    udp.on('message', (m) => (m.toString() === `control ${secret}\n` ? (controlArrived = true) : datagrams++));
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    const port = udp.address().port;
    const name = 'example.com'; // reserved for examples (RFC 2606): no registry's host
    const hostResolves = await lookup(name).then(
      () => true,
      () => false,
    );
    try {
      const r = await inSandbox((s) =>
        s.run(
          `getent hosts ${name}; echo "rc=$?"; echo ping > /dev/udp/127.0.0.1/${port}; echo ping > /dev/udp/8.8.8.8/53`,
        ),
      );
      expect(r.text).toMatch(/rc=2/); // getent: key not found
      // Loopback delivery happens inside the sender's syscall, so a datagram the sandbox got out would
      // already be queued ahead of this one, sent by the host after the sandbox's command returned.
      const control = createSocket('udp4');
      control.send(`control ${secret}\n`, port, '127.0.0.1', () => control.close());
      await waitFor(() => controlArrived, { what: "the host's control datagram" });
      expect(datagrams).toBe(0);
      if (!hostResolves)
        process.stderr.write(`note: the host cannot resolve ${name} either; the UDP check carries this test\n`);
    } finally {
      udp.close();
    }
  });

  it('cannot read marker files in the project directory or the home directory, by path, search, .. or symlink', async () => {
    const r = await inSandbox((s) =>
      s.run(
        [
          `cat ${projectMarker} ${homeMarker}`,
          `cat /app/../..${projectMarker}`,
          `ln -s ${projectMarker} /app/p; ln -s ${homeMarker} /app/h; cat /app/p /app/h`,
          `ln -s / /app/up; cat /app/up${homeMarker}`,
          `find / \\( -path /proc -o -path /usr \\) -prune -o -name '.crl-sandbox-marker-*' -print 2>/dev/null`,
          `ls ${process.cwd()}`,
        ].join('; '),
      ),
    );
    // The files' contents, not their paths (which the command itself names).
    expect(r.text).not.toContain(`project ${secret}`);
    expect(r.text).not.toContain(`home ${secret}`);
    expect(r.text).not.toMatch(/^\/.*\.crl-sandbox-marker-/m); // find found nothing
    expect(r.text).toMatch(/No such file or directory/);
  });

  it('cannot write outside the workspace and /tmp, and nothing it writes reaches the host', async () => {
    const hostDir = mkdtempSync(join(tmpdir(), 'crl-victim-'));
    const victim = join(hostDir, 'keep.txt');
    writeFileSync(victim, 'original');
    try {
      const targets = ['/x', '/usr/x', '/etc/x', '/bin/x', '/dev/x', '/proc/x', victim, projectMarker, homeMarker];
      const r = await inSandbox((s) =>
        s.run(
          targets.map((t) => `echo pwned > ${t} 2>/dev/null && echo "WROTE ${t}"`).join('; ') +
            `; mkdir -p ${hostDir} && echo pwned > ${victim} && echo "WROTE mkdir"; echo pwned > /app/ok && echo APP; echo pwned > /tmp/0ok && echo TMP`,
        ),
      );
      for (const t of targets.slice(0, 7)) expect(r.text).not.toContain(`WROTE ${t}`);
      expect(r.text).toContain('APP');
      expect(r.text).toContain('TMP');
      expect(readFileSync(victim, 'utf8')).toBe('original');
      expect(readFileSync(projectMarker, 'utf8')).toBe(`project ${secret}\n`);
      expect(readFileSync(homeMarker, 'utf8')).toBe(`home ${secret}\n`);
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
    }
  });

  it('cannot see or signal host processes', async () => {
    const tag = `crl-host-process-${secret}`;
    // '; :' keeps bash from exec'ing sleep, so the tag stays in the host process's command line.
    const host = spawn('bash', ['-c', 'sleep 60; :', tag], { stdio: 'ignore' });
    try {
      await until(() => processesWithArg(tag).length > 0);
      const r = await inSandbox((s) =>
        s.run(
          // '[c]rl-…' matches the tag but not grep's own command line, so the count is the host's
          // process alone: counting grep itself raced with ps reading /proc before grep's exec.
          `grep -l ${tag} /proc/*/cmdline 2>/dev/null; ps -eo args | grep -c '[${tag[0]}]${tag.slice(1)}'; kill -9 ${host.pid}; echo "kill=$?"`,
        ),
      );
      expect(r.text).not.toMatch(/\/proc\/\d+\/cmdline/);
      expect(r.text).toContain('kill=1');
      expect(r.text).toMatch(/^0$/m); // ps does not see the host's process
      expect(host.exitCode).toBeNull();
      expect(host.killed).toBe(false);
    } finally {
      host.kill('SIGKILL');
    }
  });

  it('contains a fork bomb within the process limit; close() ends it', async () => {
    const limit = 48;
    let ns: string | null = null;
    let peak = 0;
    await inSandbox(
      async (s) => {
        ns = sandboxPidNamespace(s.pid!);
        expect(ns).not.toBeNull();
        await s.run(':(){ :|:& };:');
        // The bomb fills the table on its own schedule: wait (with a deadline) until it has, then keep
        // sampling a while for the upper bound.
        await until(() => (peak = Math.max(peak, processesInNamespace(ns!).length)) > limit / 2, 10_000);
        for (let i = 0; i < 10; i++) {
          peak = Math.max(peak, processesInNamespace(ns!).length);
          await new Promise((r) => setTimeout(r, 30));
        }
        // Builtins still answer, so the shell stays usable for the next command.
        expect((await s.run('echo still here')).text).toContain('still here');
      },
      { processes: limit },
    );
    expect(peak).toBeGreaterThan(limit / 2); // the bomb did run
    expect(peak).toBeLessThanOrEqual(limit + 1); // + bwrap's init, which the limit does not cover
    expect(await until(() => processesInNamespace(ns!).length === 0)).toBe(true);
  });

  it('stops a memory bomb at the memory limit', async () => {
    const r = await inSandbox((s) => s.run(`( printf -v x '%*s' 300000000 '' && echo ALLOCATED ); echo "rc=$?"`), {
      memoryMb: 128,
    });
    expect(r.text).not.toContain('ALLOCATED');
    expect(r.text).toMatch(/cannot allocate/);
    expect(r.text).not.toContain('rc=0');
  });

  it('stops CPU hogs at the CPU limit and large files at the file-size limit', async () => {
    const r = await inSandbox(
      (s) =>
        s.run(
          `bash -c 'while :; do :; done'; echo "cpu rc=$?"; head -c 5000000 /dev/zero > big; echo "fsize rc=$?"; stat -c %s big; head -c 3000000 /dev/zero > /tmp/1big; echo "tmp rc=$?"`,
        ),
      { cpuSeconds: 1, fileSizeMb: 4, tmpMb: 2 },
    );
    expect(r.timedOut).toBe(false);
    expect(r.text).toContain('cpu rc=152'); // SIGXCPU
    expect(r.text).toContain('fsize rc=153'); // SIGXFSZ
    expect(r.text).toMatch(/^4194304$/m);
    expect(r.text).toMatch(/No space left on device/);
  });

  it('kills a command that prints without end, soon, and keeps the shell', async () => {
    await inSandbox(
      async (s) => {
        const r = await s.run('yes');
        expect(r.outputKilled).toBe(true);
        expect(r.timedOut).toBe(false);
        expect(r.text.length).toBeLessThan(2000);
        expect(r.text).toContain('bytes of output cut');
        expect((await s.run('echo alive')).text).toBe('alive\n');
      },
      { outputBytes: 1024, outputKillBytes: 1 << 20 },
    );
  });

  it('kills a command that never ends, and everything it started, at the wall-time limit', async () => {
    await inSandbox(
      async (s) => {
        const ns = sandboxPidNamespace(s.pid!)!;
        await s.run('cd /tmp; X=kept');
        const before = processesInNamespace(ns).length;
        const r = await s.run('sleep 98760001 & sleep 98760002 | cat; echo never; f() { sleep 5; }; f');
        expect(r).toMatchObject({ timedOut: true, shellRestarted: false });
        expect(r.text).not.toContain('never');
        // SIGKILLed by the sweep before the reply; the kernel may still be tearing them down.
        expect(await until(() => processesWithArg('98760001').length === 0)).toBe(true);
        expect(await until(() => processesInNamespace(ns).length === before)).toBe(true);
        // A loop inside the shell itself costs the shell: a fresh one starts.
        expect(await s.run('while :; do :; done')).toMatchObject({ timedOut: true, shellRestarted: true });
        expect((await s.run('pwd; echo "[$X]"')).text).toBe('/app\n[]\n');
        // So does a builtin asleep on nothing the sweep can end (opening a FIFO nobody writes).
        await s.run('X=kept; mkfifo /app/never; cd /');
        expect(await s.run('read -r line < /app/never')).toMatchObject({ timedOut: true, shellRestarted: true });
        expect((await s.run('pwd; echo "[$X]"')).text).toBe('/app\n[]\n');
      },
      { commandTimeoutSec: 2 }, // far below the commands' own 5 s and forever; above a loaded machine's `cd`
    );
  });

  it('keeps the shell when it gets no CPU for seconds after a timed-out command is swept', async () => {
    // A loaded machine can leave the shell unscheduled for any time after the sweep; it is stuck
    // only when it loops or sleeps on nothing (shell-stuck.ts), never for being slow. Here the
    // shell is stopped (SIGSTOP from the host) while its command times out, and continued later.
    await inSandbox(
      async (s) => {
        await s.run('cd /tmp; X=kept');
        const reply = s.run('sleep 98760031');
        expect(await until(() => processesWithArg('98760031').length === 1)).toBe(true);
        const sleeper = processesWithArg('98760031')[0]!;
        const shell = parentOf(sleeper)!;
        process.kill(shell, 'SIGSTOP');
        let stoppedFor: number;
        try {
          // The sweep kills the sleep while the shell is stopped; it stays stopped a good while after.
          expect(await until(() => processesWithArg('98760031').length === 0)).toBe(true);
          const sweptAt = Date.now();
          expect(await until(() => Date.now() - sweptAt >= 2000)).toBe(true);
          stoppedFor = Date.now() - sweptAt;
        } finally {
          process.kill(shell, 'SIGCONT');
        }
        expect(stoppedFor).toBeGreaterThanOrEqual(2000);
        expect(await reply).toMatchObject({ timedOut: true, shellRestarted: false });
        expect((await s.run('pwd; echo "[$X]"')).text).toBe('/tmp\n[kept]\n');
      },
      { commandTimeoutSec: 1 },
    );
  });

  it('sweeps a timed-out command even when the supervisor reads the sweep late', async () => {
    // The host names the command's start on the shared kernel clock (KT): a supervisor that gets no
    // CPU until long after the timeout still knows which processes the command started.
    await inSandbox(
      async (s) => {
        // The sleep is a grandchild of the shell (a subshell's child): only the tick names it.
        const reply = s.run('( sleep 98760041; true )');
        expect(await until(() => processesWithArg('98760041').some((p) => readCmd(p).startsWith('sleep')))).toBe(true);
        const sleeper = processesWithArg('98760041').find((p) => readCmd(p).startsWith('sleep'))!;
        // The supervisor's two processes (its control loop and the shell's keeper) above the shell.
        const keeper = parentOf(parentOf(parentOf(sleeper)!)!)!;
        const supervisor = [keeper, parentOf(keeper)!];
        for (const p of supervisor) process.kill(p, 'SIGSTOP');
        try {
          const stoppedAt = Date.now();
          expect(await until(() => Date.now() - stoppedAt >= 2500)).toBe(true);
        } finally {
          for (const p of supervisor) process.kill(p, 'SIGCONT');
        }
        expect(await reply).toMatchObject({ timedOut: true });
        expect(await until(() => processesWithArg('98760041').length === 0)).toBe(true);
        expect((await s.run('echo alive')).text).toBe('alive\n');
      },
      { commandTimeoutSec: 1 },
    );
  });

  it('leaves no process running after close(), however it was started', async () => {
    let ns = '';
    await inSandbox(async (s) => {
      ns = sandboxPidNamespace(s.pid!)!;
      await s.run(
        'nohup sleep 98760011 >/dev/null 2>&1 & setsid sleep 98760012 & (sleep 98760013 &); disown -a; ' +
          'bash -c \'trap "" TERM HUP; exec sleep 98760014\' &',
      );
      expect(await until(() => processesWithArg('9876001').length >= 4)).toBe(true);
    });
    expect(await until(() => processesWithArg('9876001').length === 0 && processesInNamespace(ns).length === 0)).toBe(
      true,
    );
  });

  it('survives kill -9 -1 from inside: the supervisor is the namespace init, and a fresh shell starts', async () => {
    await inSandbox(async (s) => {
      await s.run('cd /tmp; X=1');
      const r = await s.run('/bin/kill -9 -1; sleep 5');
      expect(r.shellRestarted).toBe(true);
      expect(r.timedOut).toBe(false);
      const next = await s.run('pwd; echo "[$X]"; kill -9 1; echo "rc=$?"');
      expect(next.text).toMatch(/^\/app\n\[\]\n/);
      expect((await s.run('echo alive')).text).toBe('alive\n');
    });
  });

  it('symlinks and .. cannot lead the host out of the workspace when it cleans up', async () => {
    const hostDir = mkdtempSync(join(tmpdir(), 'crl-victim-'));
    mkdirSync(join(hostDir, 'sub'));
    writeFileSync(join(hostDir, 'sub', 'keep.txt'), 'original');
    let root = '';
    await inSandbox(async (s) => {
      root = s.root!;
      const r = await s.run(
        `ln -s ${hostDir} /app/to-host; ln -s ${hostDir}/sub/keep.txt /app/file-link; ln -s ../../../.. /app/dots; ` +
          `ls /app/dots/ | tr '\\n' ' '; mkdir -p /app/locked/deep && touch /app/locked/deep/f && chmod 000 /app/locked/deep /app/locked`,
      );
      // Inside, `..` from the workspace reaches the sandbox's own root, not the host's.
      expect(r.text).toMatch(/^app bin .*usr $/m);
      expect(r.text).not.toContain('work ');
    });
    expect(readFileSync(join(hostDir, 'sub', 'keep.txt'), 'utf8')).toBe('original');
    expect(existsSync(root)).toBe(false); // removed, the locked directories too
    rmSync(hostDir, { recursive: true, force: true });
  });
});
