/**
 * .ci/finish and .ci/check-machine, the end of every CI run (docs/testing.md): what the run left is
 * named and fails it; the run's containers and images are removed; a dockerd the run started is
 * stopped, one that answered before is not. The daemon here is one of the test's own (its own data
 * root, exec root, pidfile and socket under the test's TMPDIR, reached through DOCKER_HOST), never
 * the daemon other runs on this machine share.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from './util/testing/wait-for.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_LABEL = 'org.compaction-rl.run';

/** Environment of a CI run: its markers, its TMPDIR, and the daemon it talks to. */
function runEnv(dockerHost: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CRL_CI_RUN: `ci-finish-test-${process.pid}`,
    CRL_DOCKER_RUN: `ci-finish-test/${process.pid}.1`,
    CRL_CI_TMP: mkdtempSync(join(tmpdir(), 'ci-tmp-')),
    DOCKER_HOST: dockerHost,
  };
}

/**
 * Runs .ci/NAME. Asynchronous: a dockerd the test started is its child, and only a running event
 * loop reaps it once it exits.
 */
function script(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(join(ROOT, '.ci', name), args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

describe('.ci/finish without a daemon: names what the run left', () => {
  it('fails naming a process that carries the run’s mark and a file in its TMPDIR, and passes once they are gone', async () => {
    const env = runEnv(`unix://${join(tmpdir(), 'no-daemon.sock')}`);
    const state = mkdtempSync(join(tmpdir(), 'ci-state-'));
    expect((await script('check-machine', ['snapshot', state], env)).status).toBe(0);
    const left = spawn('sleep', ['300'], { env, stdio: 'ignore' });
    const gone = new Promise((r) => left.once('exit', r));
    writeFileSync(join(env.CRL_CI_TMP!, 'left-behind'), 'x');
    try {
      const r = await script('check-machine', ['host', state], env);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`process ${left.pid}: sleep 300`);
      expect(r.stderr).toContain(`temporary file ${join(env.CRL_CI_TMP!, 'left-behind')}`);
    } finally {
      left.kill('SIGKILL');
    }
    await gone;
    const clean = mkdtempSync(join(tmpdir(), 'ci-state-'));
    expect((await script('check-machine', ['snapshot', clean], env)).status).toBe(0);
    const finish = await script('finish', [clean], { ...env, CRL_CI_TMP: mkdtempSync(join(tmpdir(), 'ci-tmp-')) });
    expect(finish.status, finish.stderr).toBe(0);
    expect(finish.stderr).toMatch(/check-machine \(host\): nothing left/);
  });
});

const canStartDaemon =
  process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v dockerd && command -v docker']).status === 0;
if (!canStartDaemon && process.env.CRL_REQUIRE_DOCKER === '1')
  throw new Error('.ci/finish tests: CRL_REQUIRE_DOCKER=1 but no dockerd can be started here (needs root)');

describe.skipIf(!canStartDaemon)('.ci/finish with a dockerd of the test’s own', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'ci-dockerd-'));
  const host = `unix://${join(dir, 'docker.sock')}`;
  // Every daemon started here, stopped at the end even when an assertion failed first.
  const daemons: { child: ChildProcess; exited: Promise<unknown> }[] = [];
  afterAll(async () => {
    for (const d of daemons) d.child.kill('SIGTERM');
    await Promise.all(daemons.map((d) => d.exited));
    // dockerd bind-mounts its data root onto itself; one that did not shut down cleanly leaves it.
    spawnSync('umount', [join(dir, 'data')], { stdio: 'ignore' });
  });

  const docker = (args: string[], input?: Buffer) =>
    spawnSync('docker', args, { env: { ...process.env, DOCKER_HOST: host }, encoding: 'utf8', input, timeout: 60_000 });

  /** Starts the daemon as `.ci/run`'s docker-setup.sh would, carrying the run's marks; resolves once it answers. */
  async function startDaemon(env: NodeJS.ProcessEnv): Promise<{ pid: number; exited: Promise<unknown> }> {
    for (const d of ['data', 'exec']) mkdirSync(join(dir, d), { recursive: true });
    const log = openSync(join(dir, 'dockerd.log'), 'a');
    const child = spawn(
      'dockerd',
      [
        ...['--data-root', join(dir, 'data'), '--exec-root', join(dir, 'exec'), '--pidfile', join(dir, 'docker.pid')],
        ...['-H', host, '--storage-driver', 'vfs', '--bridge', 'none', '--iptables=false', '--ip6tables=false'],
      ],
      { env, stdio: ['ignore', log, log] },
    );
    daemons.push({ child, exited: new Promise((r) => child.once('exit', r)) });
    await waitFor(() => docker(['version']).status === 0, { timeoutMs: 120_000, what: 'the test dockerd answering' });
    return { pid: child.pid!, exited: daemons.at(-1)!.exited };
  }

  const emptyTar = (): Buffer => spawnSync('tar', ['-c', '-C', mkdtempSync(join(tmpdir(), 'empty-')), '.']).stdout;

  /** What a run's tests leave on the daemon: an image and a container carrying the run's label. */
  function leaveResources(run: string): void {
    expect(
      docker(['import', '--change', `LABEL ${RUN_LABEL}=${run}`, '-', 'crl-ci-test/empty:1'], emptyTar()).status,
    ).toBe(0);
    expect(docker(['create', '--label', `${RUN_LABEL}=${run}`, 'crl-ci-test/empty:1', '/none']).status).toBe(0);
  }

  it('leaves a daemon that answered before the run, removing the run’s containers and images', async () => {
    const env = runEnv(host);
    const { pid, exited } = await startDaemon({ ...process.env, DOCKER_HOST: host }); // not marked: not the run's
    const state = mkdtempSync(join(tmpdir(), 'ci-state-'));
    expect((await script('check-machine', ['snapshot', state], env)).status).toBe(0);
    leaveResources(env.CRL_DOCKER_RUN!);
    const r = await script('finish', [state], env);
    expect(r.status, r.stderr).toBe(0);
    expect(docker(['ps', '-aq']).stdout.trim()).toBe('');
    expect(docker(['images', '-q']).stdout.trim()).toBe('');
    expect(() => process.kill(pid, 0)).not.toThrow();
    expect(r.stderr).not.toMatch(/stopping the dockerd/);
    process.kill(pid, 'SIGTERM');
    await exited;
  });

  it('stops the dockerd the run started (and its containerd) after removing the run’s containers and images', async () => {
    const env = runEnv(host);
    const state = mkdtempSync(join(tmpdir(), 'ci-state-'));
    // The snapshot sees the machine's shared daemon, if one answers, whose containers' mounts are
    // other runs' (docs/testing.md); the run's own daemon does not answer yet.
    const { DOCKER_HOST: _, ...machine } = env;
    expect((await script('check-machine', ['snapshot', state], machine)).status).toBe(0);
    const { pid, exited } = await startDaemon(env); // marked: every process it starts is the run's
    writeFileSync(join(state, 'dockerd.pid'), `${pid}\n`);
    // The daemon's data root held an image before the run (an earlier user of the machine): named
    // as the run's until `images` records what the daemon held once it answered.
    expect(docker(['import', '-', 'crl-ci-test/earlier:1'], emptyTar()).status).toBe(0);
    const unrecorded = await script('check-machine', ['docker', state], env);
    expect(unrecorded.status).toBe(1);
    expect(unrecorded.stderr).toMatch(/image sha256:\w+ \(crl-ci-test\/earlier:1\) on the daemon this run started/);
    expect((await script('check-machine', ['images', state], env)).status).toBe(0);
    leaveResources(env.CRL_DOCKER_RUN!);
    const r = await script('finish', [state], env);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`stopping the dockerd this run started (pid ${pid})`);
    expect(r.stderr).toMatch(/check-machine \(host\): nothing left/); // no containerd carrying the mark either
    await exited;
    expect(r.stderr).not.toMatch(/earlier/);
  });
});
