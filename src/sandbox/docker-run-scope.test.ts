import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerRun, removeRun, RUN_LABEL, runOf, runTagSuffix, sweepDeadRuns } from './docker-run-scope.ts';
import { ownerTag } from './stale-dirs.ts';
import { dockerAvailable } from './testing/docker-available.ts';

describe('the run a container or image belongs to (CRL_DOCKER_RUN)', () => {
  const saved = process.env.CRL_DOCKER_RUN;
  afterAll(() => {
    if (saved === undefined) delete process.env.CRL_DOCKER_RUN;
    else process.env.CRL_DOCKER_RUN = saved;
  });

  it('is read from the environment, gives the tag a suffix, and refuses a malformed value', () => {
    delete process.env.CRL_DOCKER_RUN;
    expect(dockerRun()).toBeNull();
    expect(runTagSuffix()).toBe('');
    process.env.CRL_DOCKER_RUN = 'ci-host/123.456';
    expect(dockerRun()).toBe('ci-host/123.456');
    expect(runTagSuffix()).toBe('-run123.456');
    process.env.CRL_DOCKER_RUN = 'no owner tag';
    expect(() => dockerRun()).toThrow(/CRL_DOCKER_RUN=no owner tag: expected <host>\/<pid>\.<start>/);
  });
});

const available = dockerAvailable('docker run labels');

describe.skipIf(!available)('removing a run’s containers and images', () => {
  const docker = (args: string[], input?: Buffer) => spawnSync('docker', args, { encoding: 'utf8', input });
  const emptyTar = spawnSync('tar', ['-c', '-C', mkdtempSync(join(tmpdir(), 'empty-')), '.']).stdout;
  const made: string[] = [];
  afterAll(() => {
    if (made.length > 0) docker(['rm', '-f', ...made]);
  });

  /** An image and a stopped container labelled with `run`, as a suite under that run leaves them. */
  function leave(run: string): { image: string; container: string } {
    const image = docker(['import', '--change', `LABEL ${RUN_LABEL}=${run}`, '-'], emptyTar).stdout.trim();
    const container = docker(['create', '--label', `${RUN_LABEL}=${run}`, image, '/none']).stdout.trim();
    made.push(container);
    return { image, container };
  }
  const exists = (id: string) => docker(['inspect', id]).status === 0;

  it('sweeps the runs whose process is gone and keeps live ones; a run removes its own', async () => {
    const dead = spawn('sleep', ['60']);
    const live = spawn('sleep', ['60']);
    if (dead.pid === undefined || live.pid === undefined) throw new Error('sleep did not start');
    const deadRun = runOf(ownerTag(dead.pid));
    const liveRun = runOf(ownerTag(live.pid));
    const exited = new Promise((r) => dead.once('exit', r));
    dead.kill('SIGKILL');
    await exited;
    try {
      const d = leave(deadRun);
      const l = leave(liveRun);
      const other = leave(`another-host/${ownerTag(dead.pid)}`); // a dead pid, but of another host: not ours to judge
      const swept = await sweepDeadRuns();
      expect(exists(d.container) || exists(d.image)).toBe(false);
      expect(swept.containers.some((id) => d.container.startsWith(id))).toBe(true);
      expect([l.container, l.image, other.container, other.image].every(exists)).toBe(true);
      const removed = await removeRun(liveRun);
      expect(removed.containers).toHaveLength(1);
      expect(exists(l.container) || exists(l.image)).toBe(false);
      expect(exists(other.container)).toBe(true);
      await removeRun(`another-host/${ownerTag(dead.pid)}`);
      expect(exists(other.container) || exists(other.image)).toBe(false);
    } finally {
      live.kill('SIGKILL');
    }
  });
});
