import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crl } from '../../cli/testing/spawn-crl.ts';
import { readRecordsFile } from '../../rollout/record-file.ts';
import { bwrapBackend } from '../../sandbox/bwrap-backend.ts';
import { dockerBackend } from '../../sandbox/docker-backend.ts';
import type { SandboxBackend } from '../../sandbox/backend.ts';
import { dockerAvailable } from '../../sandbox/testing/docker-available.ts';
import { ownBwraps, ownContainers } from '../../sandbox/testing/own-sandboxes.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { HarborEnv } from '../harbor/harbor-env.ts';
import { loadHarborTask } from '../harbor/load-tasks.ts';
import { ORACLE_COMMAND } from '../harbor/oracle-policy.ts';
import { generateRepoRepair } from './generate.ts';
import { repoRepair, repoRepairKnobs } from './index.ts';
import { attackFolder, GRADER_ATTACKS, plainFolder } from './testing/grader-attacks.ts';
import { pytestAvailable } from './testing/pytest-available.ts';

/**
 * The package under test as an attacker of its grader (grade-script.ts): each folder's solve.sh
 * leaves the bug in place and adds Python to calc/__init__.py that attacks the verdict when the
 * grader's runner imports it. On both backends each must score 0 as the agent's failure (step()
 * returns; an environment error would throw) and leave nothing running; the folder as exported
 * still scores 1 when solve.sh fixes the bug and 0 when the agent only submits.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-repo-repair-attacks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const seed = repoRepair.evalSeeds.start;
const task = generateRepoRepair(seed, repoRepairKnobs.parse({}));

/** One episode: solve.sh (unless `nop`), then submit. Rejects on an environment error. */
async function episode(
  folder: string,
  backend: SandboxBackend,
  play: 'oracle' | 'nop',
): Promise<{ reward: number; observation: string }> {
  const env = new HarborEnv({ task: loadHarborTask(folder), sandbox: backend, exposeSolution: true });
  try {
    await env.reset(0);
    if (play === 'oracle') {
      const ran = await env.step(ORACLE_COMMAND);
      expect(ran.done, ran.observation).toBe(false);
    }
    const end = await env.step('submit');
    expect(end.done).toBe(true);
    return { reward: end.reward, observation: end.observation };
  } finally {
    await env.close();
  }
}

const backends: [string, () => SandboxBackend, boolean][] = [
  ['bwrap', () => bwrapBackend(), sandboxAvailable('repo-repair grader attacks on bwrap')],
  [
    'docker',
    dockerBackend,
    dockerAvailable('repo-repair grader attacks on docker', { basePackages: ['python3-pytest'] }),
  ],
];
const withPytest = pytestAvailable('repo-repair grader attacks');

for (const [name, backend, available] of backends) {
  describe.skipIf(!available || !withPytest)(`repo-repair's grader under attack from the package, on ${name}`, () => {
    it('the folder as exported: harbor-oracle scores 1, a policy that only submits 0', async () => {
      const folder = plainFolder(join(root, name, 'plain'), task);
      const fixed = await episode(folder, backend(), 'oracle');
      expect(fixed.reward, fixed.observation).toBe(1);
      expect((await episode(folder, backend(), 'nop')).reward).toBe(0);
      expect(ownContainers({ all: true })).toEqual([]);
      expect(ownBwraps()).toEqual([]);
    }, 300_000);

    for (const attack of Object.keys(GRADER_ATTACKS)) {
      // Under bubblewrap the runner shares the grader's uid and can kill it (kill-grader): there the
      // framework's check of the signed verdict refuses the reward.txt the package wrote then.
      const title = `${attack}: reward 0, a failure not an environment error, nothing left running`;
      it(
        title,
        async () => {
          const r = await episode(attackFolder(join(root, name, attack), task, attack), backend(), 'oracle');
          expect(r.reward, r.observation).toBe(0);
          expect(ownContainers({ all: true })).toEqual([]);
          expect(ownBwraps()).toEqual([]);
        },
        300_000,
      );
    }

    it('crl run --policy harbor-oracle records each attack as a failure with reward 0, the plain folder as a success', () => {
      const suite = join(root, name, 'suite');
      const attacks = Object.keys(GRADER_ATTACKS);
      for (const a of attacks) attackFolder(join(suite, a), task, a);
      plainFolder(join(suite, 'plain'), task);
      const out = join(root, name, 'suite.jsonl');
      const episodes = String(attacks.length + 1);
      const r = crl(
        [
          'run',
          '--env',
          `harbor:${suite}`,
          '--sandbox',
          name,
          '--policy',
          'harbor-oracle',
          '--episodes',
          episodes,
          '--out',
          out,
        ],
        { timeoutMs: 580_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.last)).toMatchObject({ episodes: attacks.length + 1, envErrors: 0 });
      const got = Object.fromEntries(readRecordsFile(out).map((x) => [x.env, [x.reward, x.outcome]]));
      const want = Object.fromEntries(attacks.map((a) => [`harbor:${a}`, [0, 'failure']]));
      expect(got).toEqual({ ...want, 'harbor:plain': [1, 'success'] });
      expect(ownContainers({ all: true })).toEqual([]);
      expect(ownBwraps()).toEqual([]);
    }, 600_000);
  });
}
