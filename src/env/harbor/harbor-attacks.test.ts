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
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTask } from './load-tasks.ts';
import { ORACLE_COMMAND } from './oracle-policy.ts';
import { attackTask, ATTACKS } from './testing/attack-tasks.ts';

/**
 * The agent as an attacker (docs/sandbox.md, "What the agent can attack"): each folder's solve.sh
 * tries to make a verifier that always writes 0 say something else, or to turn its own failure
 * into an environment error. On both backends, each must end as a failure with reward 0 (step()
 * returns; an environment error would throw), and leave nothing running.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-harbor-attacks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The oracle's episode: solve.sh, then submit. Resolves with the verifier's word; rejects on an environment error. */
async function attack(name: string, backend: SandboxBackend): Promise<{ reward: number; observation: string }> {
  const env = new HarborEnv({ task: loadHarborTask(attackTask(root, name)), sandbox: backend, exposeSolution: true });
  try {
    await env.reset(0);
    const ran = await env.step(ORACLE_COMMAND);
    if (ran.done) return { reward: ran.reward, observation: ran.observation };
    const end = await env.step('submit');
    expect(end.done).toBe(true);
    return { reward: end.reward, observation: end.observation };
  } finally {
    await env.close();
  }
}

const backends: [string, () => SandboxBackend, boolean][] = [
  ['docker', dockerBackend, dockerAvailable('Harbor attacks on docker')],
  ['bwrap', () => bwrapBackend(), sandboxAvailable('Harbor attacks on bwrap')],
];

for (const [name, backend, available] of backends) {
  describe.skipIf(!available)(`an agent attacking its verifier, on ${name}`, () => {
    for (const a of Object.keys(ATTACKS)) {
      it(`${a}: reward 0, a failure not an environment error, nothing left running`, async () => {
        const r = await attack(a, backend());
        expect(r.reward, r.observation).toBe(0);
        if (a === 'fill-disk') expect(r.observation).toMatch(/over its storage_mb of 50/);
        expect(ownContainers({ all: true })).toEqual([]);
        expect(ownBwraps()).toEqual([]);
      }, 120_000);
    }
  });
}

describe.skipIf(!backends[0]![2])('crl run --sandbox docker --policy harbor-oracle on attack folders', () => {
  it('scores each 0 and records each as a failure, none as an environment error', () => {
    const names = ['replace-tests', 'forge-reply', 'block-logs'];
    for (const a of names) attackTask(join(root, 'suite'), a);
    const out = join(root, 'suite.jsonl');
    const r = crl(
      ['run', '--env', `harbor:${join(root, 'suite')}`, '--sandbox', 'docker', '--policy', 'harbor-oracle'].concat([
        '--episodes',
        String(names.length),
        '--out',
        out,
      ]),
      { timeoutMs: 580_000 },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.last)).toMatchObject({ episodes: names.length, envErrors: 0, passAt1: 0 });
    const records = readRecordsFile(out);
    expect(records.map((x) => [x.reward, x.outcome])).toEqual(names.map(() => [0, 'failure']));
  }, 600_000);
});
