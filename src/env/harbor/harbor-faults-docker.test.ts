import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crlAsync } from '../../cli/testing/spawn-crl.ts';
import { readRecordsFile } from '../../rollout/record-file.ts';
import { dockerBackend } from '../../sandbox/docker-backend.ts';
import { SANDBOX_LABEL } from '../../sandbox/docker-cli.ts';
import { SandboxError } from '../../sandbox/sandbox-types.ts';
import { dockerAvailable, TEST_BASE_IMAGE } from '../../sandbox/testing/docker-available.ts';
import { readReward, VerifierFaultError } from './reward-file.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { writeTaskFolder } from './testing/task-folders.ts';

/**
 * Faults injected for real into Docker sandboxes (docs/faults.md): a container killed with
 * `docker kill` is a fault of the sandbox, never a wrong answer, and a reward file that cannot be
 * read because the container is gone is a fault of the verifier, never a reward of 0.
 */
const available = dockerAvailable('sandbox faults on docker');
const root = mkdtempSync(join(tmpdir(), 'crl-docker-faults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TOML =
  '[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 30.0\n[environment]\nmemory_mb = 512\nallow_internet = false\n';

/** Sandbox containers running now whose file `path` exists (the marker of one test's container). */
function containersWith(path: string): string[] {
  const ids = spawnSync('docker', ['ps', '-q', '--filter', `label=${SANDBOX_LABEL}`], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean);
  return ids.filter((id) => spawnSync('docker', ['exec', id, 'test', '-e', path]).status === 0);
}

describe.skipIf(!available)('faults in docker sandboxes', () => {
  it('readFile tells a missing file (null) from a container that is gone (SandboxError); the reward read is a verifier fault', async () => {
    const session = await dockerBackend().start({
      image: TEST_BASE_IMAGE,
      dirs: [{ path: '/app', writable: true }],
      workdir: '/app',
      emptyDirs: ['/logs/verifier'],
    });
    try {
      await session.run('echo 1 > /logs/verifier/reward.txt && touch /app/read-fault-marker');
      expect(await session.readFile('/logs/verifier/absent.txt', { maxBytes: 100 })).toBeNull();
      expect(await readReward(session)).toEqual({ reward: 1, source: 'reward.txt' });
      const [id] = containersWith('/app/read-fault-marker');
      expect(spawnSync('docker', ['kill', id!]).status).toBe(0);
      await expect(session.readFile('/logs/verifier/reward.txt', { maxBytes: 100 })).rejects.toBeInstanceOf(
        SandboxError,
      );
      const read = readReward(session);
      await expect(read).rejects.toBeInstanceOf(VerifierFaultError);
      await expect(read).rejects.toThrow(/reward\.txt could not be read/);
    } finally {
      await session.close();
    }
  });

  it('crl run: a container killed mid-episode is counted in envErrors and its record says sandbox fault', async () => {
    const suite = join(root, 'suite');
    const task = (name: string, solve: string) =>
      writeTaskFolder(join(suite, name), {
        'instruction.md': 'Write 1 to answer.txt.\n',
        'task.toml': TOML,
        'environment/Dockerfile': `FROM ${TEST_BASE_IMAGE}\nWORKDIR /app\n`,
        'tests/test.sh':
          '#!/bin/bash\n[ "$(cat /app/answer.txt)" = 1 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
        'solution/solve.sh': solve,
      });
    task('killed', '#!/bin/bash\ntouch /app/kill-me-marker\nsleep 100\necho 1 > answer.txt\n');
    task('passes', '#!/bin/bash\necho 1 > answer.txt\n');
    const out = join(root, 'killed.jsonl');
    const running = crlAsync(
      [
        'run',
        '--env',
        `harbor:${suite}`,
        '--sandbox',
        'docker',
        '--policy',
        'harbor-oracle',
        '--episodes',
        '2',
        '--out',
        out,
      ],
      { timeoutMs: 230_000 },
    );
    const [id] = await waitFor(
      () => {
        const ids = containersWith('/app/kill-me-marker');
        return ids.length > 0 ? ids : null;
      },
      // docker exec per container per check: once a second is enough.
      { what: "the killed task's container", timeoutMs: 200_000, intervalMs: 1000 },
    );
    expect(spawnSync('docker', ['kill', id!]).status).toBe(0);
    const r = await running;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.last)).toMatchObject({ passAt1: 0.5, episodes: 2, envErrors: 1, faults: { sandbox: 1 } });
    expect(r.stderr).toMatch(/1 of 2 episodes ended in a fault.*sandbox 1/);
    const records = readRecordsFile(out);
    const killed = records.find((x) => x.episodeId.startsWith('harbor-killed'))!;
    expect(killed.outcome).toBe('env-error');
    expect(killed.events.find((e) => e.kind === 'env-error')).toMatchObject({ during: 'step', fault: 'sandbox' });
    expect(records.find((x) => x.episodeId.startsWith('harbor-passes'))!.outcome).toBe('success');
  }, 240_000); // two image builds and starts on a shared daemon
});
