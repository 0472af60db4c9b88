import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crl } from '../../cli/testing/spawn-crl.ts';
import { readRecordsFile } from '../../rollout/record-file.ts';
import { dockerBackend } from '../../sandbox/docker-backend.ts';
import { OWNER_LABEL, SANDBOX_LABEL } from '../../sandbox/docker-cli.ts';
import { buildImage, treeHash } from '../../sandbox/docker-images.ts';
import { dockerRun, RUN_LABEL, runTagSuffix } from '../../sandbox/docker-run-scope.ts';
import { dockerAvailable, TEST_BASE_IMAGE } from '../../sandbox/testing/docker-available.ts';
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTask } from './load-tasks.ts';
import { taskImage, taskImageRepo, taskNetwork } from './task-image.ts';
import { writeTaskFolder } from './testing/task-folders.ts';

/**
 * Harbor task folders whose environment is a Dockerfile, run in containers (docs/harbor.md),
 * written here (FROM the offline test base image, scripts/docker-setup.sh) rather than copied
 * from a task set.
 */
const available = dockerAvailable('Harbor task folders on docker');
const root = mkdtempSync(join(tmpdir(), 'crl-harbor-docker-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TOML = (extra = '') =>
  `[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n[environment]\nmemory_mb = 512\nallow_internet = false\n${extra}`;
const DOCKERFILE = `FROM ${TEST_BASE_IMAGE}\nWORKDIR /work/app\nCOPY data /work/app/data\nRUN echo built > /opt/built\n`;
const VERIFY_SUM =
  '#!/bin/bash\ncd "$(pwd)"\n[ "$PWD" = /work/app ] && [ -f /opt/built ] && [ "$(cat answer.txt 2>/dev/null)" = 12 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\necho verifier-ran\n';

function sumTask(name: string, files: Record<string, string> = {}): string {
  return writeTaskFolder(join(root, 'suite', name), {
    'instruction.md': 'Add the numbers in data/nums and write the sum to answer.txt in the working directory.\n',
    'task.toml': TOML(),
    'environment/Dockerfile': DOCKERFILE,
    'environment/data/nums': '3\n4\n5\n',
    'tests/test.sh': VERIFY_SUM,
    'solution/solve.sh': "#!/bin/bash\nawk '{s+=$1} END {print s}' data/nums > answer.txt\n",
    ...files,
  });
}

/** The tags of a repository's images built under this suite's run (other suites share the daemon). */
function tagsOf(repo: string): string[] {
  const run = dockerRun();
  const mine = run === null ? [] : ['--filter', `label=${RUN_LABEL}=${run}`];
  return spawnSync('docker', ['images', repo, ...mine, '--format', '{{.Tag}}'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .sort();
}
/** Containers of this process (other test files make their own on the same daemon meanwhile). */
function containers(): string[] {
  return spawnSync(
    'docker',
    ['ps', '-a', '--filter', `label=${SANDBOX_LABEL}`, '--format', `{{.ID}} {{.Label "${OWNER_LABEL}"}}`],
    { encoding: 'utf8' },
  )
    .stdout.split('\n')
    .filter((l) => l.includes(`/${process.pid}.`));
}

/** One episode of a scripted agent: its commands in order, then submit. */
async function episode(dir: string, commands: string[], options: { exposeSolution?: boolean } = {}) {
  const env = new HarborEnv({ task: loadHarborTask(dir), sandbox: dockerBackend(), ...options });
  try {
    await env.reset(0);
    const observations: string[] = [];
    for (const c of commands) {
      const s = await env.step(c);
      observations.push(s.observation);
      if (s.done) return { reward: s.reward, observations };
    }
    const end = await env.step('submit');
    return { reward: end.reward, observations: [...observations, end.observation] };
  } finally {
    await env.close();
  }
}

describe.skipIf(!available)('Harbor task folders with a Dockerfile, in containers', () => {
  it('crl run --sandbox docker: harbor-oracle passes every task, harbor-nop none, records name each task', () => {
    sumTask('sum-plain');
    sumTask('sum-json', {
      'tests/test.sh':
        '#!/bin/bash\nif [ "$(cat answer.txt)" = 12 ]; then r=1; else r=0; fi\necho "{\\"reward\\": $r, \\"lines\\": 3}" > /logs/verifier/reward.json\n',
    });
    sumTask('sum-wrong-solution', { 'solution/solve.sh': '#!/bin/bash\necho 13 > answer.txt\n' });
    const suite = join(root, 'suite');
    const out = join(root, 'oracle.jsonl');
    const runSuite = (policy: string, to: string) =>
      crl([
        'run',
        '--env',
        `harbor:${suite}`,
        '--sandbox',
        'docker',
        '--policy',
        policy,
        '--episodes',
        '3',
        '--out',
        to,
      ]);
    const a = runSuite('harbor-oracle', out);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout.trim().split('\n').pop()!)).toMatchObject({ episodes: 3, envErrors: 0 });
    const records = readRecordsFile(out);
    const byTask = Object.fromEntries(records.map((r) => [r.episodeId.replace(/-\d+$/, ''), r.reward]));
    expect(byTask).toEqual({ 'harbor-sum-json': 1, 'harbor-sum-plain': 1, 'harbor-sum-wrong-solution': 0 });
    const nop = runSuite('harbor-nop', join(root, 'nop.jsonl'));
    expect(nop.code).toBe(0);
    expect(JSON.parse(nop.stdout.trim().split('\n').pop()!)).toMatchObject({ passAt1: 0, episodes: 3 });
  }, 300_000); // two crl processes building and running three images: minutes on a busy machine

  it('uploads /tests only after the agent, keeps the verifier output in test-stdout.txt, and the agent cannot write the reward', async () => {
    const dir = sumTask('sum-isolation', {
      // reward 1 only when the answer is right (it is not) or when stdout is Harbor's log file and the agent left nothing running
      'tests/test.sh':
        '#!/bin/bash\n[ "$(readlink /proc/$$/fd/1)" = /logs/verifier/test-stdout.txt ] || exit 3\nif grep -qx sleep /proc/[0-9]*/comm 2>/dev/null; then echo 0.5 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n',
    });
    const r = await episode(dir, [
      'ls /tests 2>&1; ls /solution 2>&1',
      'echo 1 > /logs/verifier/reward.txt; (sleep 1; echo 1 > /logs/verifier/reward.txt) & disown; sleep 200 & disown',
      'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "',
    ]);
    expect(r.observations[0]).toMatch(/ls: cannot access '\/tests': No such file/);
    expect(r.observations[0]).toMatch(/ls: cannot access '\/solution'/);
    expect(r.observations[2]).toMatch(/^lo\n\[exit 0\]$/);
    // 0, not 1 (what the agent wrote and left running did not count), not 0.5 (a sleep survived), not missing (stdout elsewhere)
    expect(r.reward).toBe(0);
    expect(r.observations.at(-1)).toMatch(/verifier reward 0\]$/);
  });

  it('a 20 MB command completes; agent and verifier timeouts end the episode with a note', async () => {
    const dir = sumTask('sum-timeouts', {
      'task.toml': TOML()
        .replace('[agent]\ntimeout_sec = 60.0', '[agent]\ntimeout_sec = 3.0')
        .replace('[verifier]\ntimeout_sec = 30.0', '[verifier]\ntimeout_sec = 2.0'),
      'tests/test.sh': '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nsleep 100\n',
    });
    const big = await episode(dir, ['head -c 20000000 /dev/zero | tr "\\0" y | wc -c; echo finished']);
    expect(big.observations[0]).toContain('20000000');
    expect(big.observations[0]).toContain('finished');
    const slow = await episode(dir, ['sleep 30']);
    expect(slow.observations.join('\n')).toMatch(/timed out after 3 s/);
    expect(slow.observations.join('\n')).toMatch(/the verifier timed out after 2 s/);
  });

  it('builds each environment once, for episodes started together and for a copy elsewhere, and leaves no container behind', async () => {
    // Content no other test builds, so the first wave starts from an empty cache.
    const dir = sumTask('sum-many', { 'environment/data/wave': 'sum-many\n' });
    const copy = join(root, 'elsewhere', 'sum-many'); // another worker's copy: a path this process never resolved
    cpSync(dir, copy, { recursive: true });
    const repo = taskImageRepo(loadHarborTask(dir));
    const tag = `${treeHash(join(dir, 'environment')).slice(0, 16)}${runTagSuffix()}`;
    const containersBefore = containers().length;
    const wave = async (d: string) =>
      (
        await Promise.all(
          Array.from({ length: 8 }, () => episode(d, ['bash /solution/solve.sh'], { exposeSolution: true })),
        )
      ).map((r) => r.reward);
    // Eight episodes at once, none built before: one image, shared by all of them.
    expect(tagsOf(repo)).toEqual([]);
    expect(await wave(dir)).toEqual(Array(8).fill(1));
    expect(tagsOf(repo)).toEqual([tag]);
    // The same content at another path is found on the daemon by its tag, not built again.
    expect(await wave(copy)).toEqual(Array(8).fill(1));
    expect(tagsOf(repo)).toEqual([tag]);
    expect(containers().length).toBe(containersBefore);
  }, 600_000);

  it('the image cache is keyed by content: the same environment elsewhere is not rebuilt, a changed one is', async () => {
    const dir = sumTask('sum-cache');
    const task = loadHarborTask(dir);
    const used = (await taskImage(task)).image;
    const hash = treeHash(join(dir, 'environment')).slice(0, 16);
    expect(used.startsWith(`${taskImageRepo(task)}:${hash}`)).toBe(true);
    // A copy at another path (what another process or worker sees): the same tag, found by the daemon.
    const copy = join(root, 'elsewhere', 'sum-cache');
    cpSync(dir, copy, { recursive: true });
    const again = await buildImage({
      contextDir: join(copy, 'environment'),
      repo: taskImageRepo(task),
      timeoutMs: 120_000,
    });
    expect(again).toMatchObject({ image: used, source: 'cached' });
    writeFileSync(join(copy, 'environment', 'data', 'nums'), '3\n4\n6\n');
    const changed = await buildImage({
      contextDir: join(copy, 'environment'),
      repo: taskImageRepo(task),
      timeoutMs: 120_000,
    });
    expect(changed.source).toBe('built');
    expect(changed.image).not.toBe(used);
  });

  it('runs in [environment] docker_image when present, and builds the Dockerfile when that image cannot be had', async () => {
    const present = sumTask('image-present', {
      'task.toml': TOML(`docker_image = "${TEST_BASE_IMAGE}"\nworkdir = "/srv"\n`),
      'environment/Dockerfile': 'FROM crl-test/never-built:none\n', // not used: the named image is present
      'tests/test.sh':
        '#!/bin/bash\n[ "$PWD" = /srv ] && [ ! -f /opt/built ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
    });
    expect((await episode(present, [])).reward).toBe(1);
    const fallback = sumTask('image-absent', { 'task.toml': TOML('docker_image = "crl-test/absent:none"\n') });
    expect((await episode(fallback, ['bash /solution/solve.sh'], { exposeSolution: true })).reward).toBe(1);
  });

  it('a task that asks for a network gets one when the daemon has a bridge, and is told when it has none', async () => {
    const hasBridge = spawnSync('docker', ['network', 'inspect', 'bridge']).status === 0;
    // reward 1 exactly when the verifier's container has an interface other than loopback; without
    // one the verifier fails (writes no reward), which is when a task that asked is told why
    const NET_TEST =
      "#!/bin/bash\ntail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -vqx lo || exit 1\necho 1 > /logs/verifier/reward.txt\n";
    const asks = sumTask('net-asks', {
      'task.toml': TOML().replace('allow_internet = false', 'allow_internet = true'),
      'tests/test.sh': NET_TEST,
    });
    const quiet = sumTask('net-quiet', { 'tests/test.sh': NET_TEST });
    expect(taskNetwork(loadHarborTask(asks))).toEqual(
      hasBridge ? { given: 'bridge', note: null } : { given: 'none', note: expect.stringMatching(/no bridge network/) },
    );
    expect(taskNetwork(loadHarborTask(quiet))).toEqual({ given: 'none', note: null });
    const a = await episode(asks, []);
    expect(a.reward).toBe(hasBridge ? 1 : 0);
    if (!hasBridge) expect(a.observations.at(-1)).toMatch(/no bridge network.*not for a wrong answer/);
    const q = await episode(quiet, []);
    expect(q.reward).toBe(0);
    expect(q.observations.at(-1)).not.toMatch(/bridge network/);
  });
});
