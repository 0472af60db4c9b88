import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Environment, EnvStep } from '../../contracts/index.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import type { SandboxBackend } from '../../sandbox/backend.ts';
import { bwrapBackend } from '../../sandbox/bwrap-backend.ts';
import { dockerBackend } from '../../sandbox/docker-backend.ts';
import { dockerAvailable } from '../../sandbox/testing/docker-available.ts';
import { processesInNamespace, processesWithArg, sandboxPidNamespace } from '../../sandbox/testing/host-processes.ts';
import { ownBwraps, ownContainers } from '../../sandbox/testing/own-sandboxes.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { Rng } from '../../util/random.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTask } from './load-tasks.ts';
import { harborOraclePolicy, ORACLE_COMMAND } from './oracle-policy.ts';
import { BROKEN_REWARDS, daemonProgram, signedTask, verifierTask } from './testing/verifier-tasks.ts';

/**
 * The verifier's lifecycle (docs/harbor.md, "The verifier runs alone"; docs/faults.md, "Whose
 * fault"), on both backends: nothing the code under test starts outlives tests/test.sh; whatever
 * it does to the reward file, and a verifier that crashes or times out, is the agent's failure
 * (reward 0, outcome failure, a note in the observation), never a fault; a signed task's reward
 * counts only with its grader's signature; a sandbox killed from outside is still a fault.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-harbor-verifier-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const TAG = `crl-daemon-${process.pid}-${Date.now() % 100000}`;

/** Processes running in this process's one sandbox (host pids for bwrap, container pids for docker). */
function sandboxProcesses(backend: string): string[] {
  if (backend === 'bwrap') {
    const [bwrap] = ownBwraps();
    const ns = bwrap === undefined ? null : sandboxPidNamespace(bwrap);
    return ns === null ? [] : processesInNamespace(ns).map(String);
  }
  const [id] = ownContainers();
  const top = spawnSync('docker', ['top', id!, '-o', 'pid,stat,args'], { encoding: 'utf8' });
  return top.stdout.trim().split('\n').slice(1);
}

/** Kills the sandbox of this process from outside, as a host failure would. */
function killSandbox(backend: string): void {
  if (backend === 'bwrap') process.kill(ownBwraps()[0]!, 'SIGKILL');
  else expect(spawnSync('docker', ['kill', ownContainers()[0]!]).status).toBe(0);
}

/** A HarborEnv that keeps its last observation. */
class Kept implements Environment {
  readonly name: string;
  last = '';
  constructor(private readonly env: HarborEnv) {
    this.name = env.name;
  }
  reset(seed: number) {
    return this.env.reset(seed);
  }
  async step(action: string): Promise<EnvStep> {
    const r = await this.env.step(action);
    this.last = r.observation;
    return r;
  }
  close() {
    return this.env.close();
  }
}

/** The oracle's episodes over the folders, all at once; each record with its last observation. */
async function oracleEpisodes(dirs: string[], backend: () => SandboxBackend) {
  const tokenizer = loadTokenizer('qwen3');
  const { config, layout } = resolveRolloutConfig({ tokenizer, input: {} });
  const envs = dirs.map(
    (d) => new Kept(new HarborEnv({ task: loadHarborTask(d), sandbox: backend(), exposeSolution: true })),
  );
  const records: EpisodeRecord[] = await runEpisodes({
    episodes: envs.map((env, i) => ({ episodeId: `v${i}`, env, seed: i })),
    config,
    layout,
    actor: textPolicySampler({ tokenizer, policy: harborOraclePolicy, rng: new Rng(0) }),
  });
  return records.map((r, i) => ({ record: r, observation: envs[i]!.last }));
}

const backends: [string, () => SandboxBackend, boolean][] = [
  ['bwrap', () => bwrapBackend(), sandboxAvailable('the Harbor verifier on bwrap')],
  ['docker', dockerBackend, dockerAvailable('the Harbor verifier on docker')],
];

for (const [name, backend, available] of backends) {
  describe.skipIf(!available)(`the Harbor verifier on ${name}`, () => {
    it('a daemon the code under test leaves is killed with test.sh: reward 0, only the supervisor left', async () => {
      const tag = `${TAG}-${name}`;
      const dir = verifierTask(join(root, name), 'daemon', { program: daemonProgram(tag) });
      const env = new HarborEnv({ task: loadHarborTask(dir), sandbox: backend(), exposeSolution: true });
      try {
        await env.reset(0);
        expect((await env.step(ORACLE_COMMAND)).done).toBe(false);
        const end = await env.step('submit');
        expect(end.reward, end.observation).toBe(0);
        // Before close: the daemon is gone already, and nothing but the supervisor runs.
        expect(processesWithArg(tag)).toEqual([]);
        expect(sandboxProcesses(name)).toHaveLength(1);
      } finally {
        await env.close();
      }
    }, 120_000);

    it('a broken reward file, a crashed or timed-out verifier: reward 0, outcome failure, not a fault', async () => {
      const cases = Object.entries(BROKEN_REWARDS).map(([n, program]) =>
        // bwrap's verifier shell is killed too: it never reports and the verifier times out.
        verifierTask(join(root, name, 'broken'), n, { program, verifierSec: n === 'kill-everything' ? 5 : 30 }),
      );
      cases.push(
        verifierTask(join(root, name, 'broken'), 'timeout', {
          program: 'true',
          testSh: '#!/bin/bash\necho 0 > /logs/verifier/reward.txt\nsleep 100\n',
          verifierSec: 3,
        }),
      );
      const results = await oracleEpisodes(cases, backend);
      const names = [...Object.keys(BROKEN_REWARDS), 'timeout'];
      for (const [i, { record, observation }] of results.entries()) {
        const what = `${names[i]}: ${observation} ${JSON.stringify(record.events)}`;
        expect(record.outcome, what).toBe('failure');
        expect(record.reward, what).toBe(0);
        expect(
          record.events.filter((e) => e.kind === 'env-error'),
          what,
        ).toEqual([]);
      }
      const obs = Object.fromEntries(names.map((n, i) => [n, results[i]!.observation]));
      expect(obs['not-a-number']).toMatch(/verifier reward 0: reward\.txt holds "oops", not a decimal number/);
      for (const n of ['directory', 'link', 'oversized'])
        expect(obs[n]).toMatch(/verifier reward 0: no reward\.txt or reward\.json to read/);
      expect(obs.timeout).toMatch(/verifier reward 0: the verifier timed out after 3 s/);
    }, 240_000);

    it('a signed task: its reward counts only with the signature of its grader, under this episode key', async () => {
      const dir = signedTask(join(root, name), 'signed');
      const run = async (mode: string) => {
        const env = new HarborEnv({ task: loadHarborTask(dir), sandbox: backend(), exposeSolution: true });
        try {
          await env.reset(0);
          await env.step(ORACLE_COMMAND);
          await env.step(`echo ${mode} > /app/mode`);
          return await env.step('submit');
        } finally {
          await env.close();
        }
      };
      const good = await run('good');
      expect(good.reward, good.observation).toBe(1);
      const unsigned = await run('unsigned');
      expect(unsigned.reward).toBe(0);
      expect(unsigned.observation).toMatch(/reward\.txt is not signed/);
      const wrong = await run('wrong-key');
      expect(wrong.reward).toBe(0);
      expect(wrong.observation).toMatch(/reward\.sig does not match reward\.txt/);
      // The grader signed 0; the code under test then wrote 1: the signature no longer matches.
      const tamper = await run('tamper');
      expect(tamper.reward).toBe(0);
      expect(tamper.observation).toMatch(/reward\.sig does not match reward\.txt/);
    }, 240_000);

    it('a sandbox killed from outside while the verifier runs is still a sandbox fault', async () => {
      const mark = `${process.pid}${Date.now() % 100000}`;
      const dir = verifierTask(join(root, name), 'killed', {
        program: 'true',
        testSh: `#!/bin/bash\nsleep ${mark}\n`,
        verifierSec: 100,
      });
      const running = oracleEpisodes([dir], backend);
      await waitFor(() => processesWithArg(`sleep\0${mark}`).length > 0, {
        what: "the verifier's sleep",
        timeoutMs: 90_000,
        intervalMs: 100,
      });
      killSandbox(name);
      const record = (await running)[0]!.record;
      expect(record.outcome).toBe('env-error');
      expect(record.events.find((e) => e.kind === 'env-error')).toMatchObject({ during: 'step', fault: 'sandbox' });
    }, 120_000);
  });
}
