import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runExpertEpisodes, windowsUsed, type WriterChoice } from '../../experiments/testing/runtime-episodes.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { Rng } from '../../util/random.ts';
import { addContainerFiles } from '../harbor/container-files.ts';
import { HarborEnv } from '../harbor/harbor-env.ts';
import { loadHarborTasks } from '../harbor/load-tasks.ts';
import { harborOraclePolicy } from '../harbor/oracle-policy.ts';
import { repoRepair, repoRepairKnobs } from './index.ts';
import { pytestAvailable } from './testing/pytest-available.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-repo-repair-episodes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const available = sandboxAvailable('repo-repair episodes') && pytestAvailable('repo-repair episodes');

const seeds = Array.from({ length: 12 }, (_, i) => repoRepair.evalSeeds.start + i);
const expertRun = (writer: WriterChoice, windows: number): Promise<EpisodeRecord[]> =>
  runExpertEpisodes({ family: repoRepair, seeds, writer, windows, concurrency: 6 });
const pass = (rs: readonly EpisodeRecord[]) => rs.filter((r) => r.reward >= 1).length / rs.length;
/** The episodes that did not pass, with what ended them (a fault says whose and why). */
const failures = (rs: readonly EpisodeRecord[]): string =>
  rs
    .filter((r) => r.reward < 1)
    .map((r) => {
      const errors = r.events.flatMap((e) => (e.kind === 'env-error' ? [`${e.during}: ${e.message}`] : []));
      return `seed ${r.seed}: ${r.outcome} after ${r.steps} steps, ${r.compactions} compactions ${errors.join('; ')}`;
    })
    .join('\n');

describe.skipIf(!available)('repo-repair episodes in the sandbox (Qwen3 tokens, the family rollout)', () => {
  it('the expert passes with oracle summaries at x4; every task needs a compaction; null summaries fail', async () => {
    const x4 = await expertRun('oracle', 4);
    expect(pass(x4), failures(x4)).toBe(1);
    for (const r of x4) expect(r.events.filter((e) => e.kind === 'observation-cut')).toEqual([]);
    // The expert is deterministic: a task passes at x1 exactly when it fits one window.
    expect(x4.filter((r) => windowsUsed(r) === 1)).toEqual([]);
    expect(x4.filter((r) => windowsUsed(r) === 3).length).toBeGreaterThan(0);
    expect(pass(await expertRun('null', 4))).toBeLessThanOrEqual(0.17);
  });

  it('exported task folders: harbor-oracle passes every one, a policy that only submits none', async () => {
    const dir = join(root, 'suite');
    const knobs = repoRepairKnobs.parse({});
    for (const [i, seed] of seeds.slice(0, 4).entries()) {
      repoRepair.writeTaskFolder!({ seed, knobs, dir: join(dir, `repo-repair-${seed}`) });
      // Half carry the container build files: their setup.sh keeps them runnable here.
      if (i % 2 === 1) addContainerFiles(join(dir, `repo-repair-${seed}`), 'python:3.11-slim');
    }
    const tasks = loadHarborTasks(dir);
    expect(tasks.map((t) => t.dockerfile)).toEqual([false, true, false, true]);
    const tokenizer = loadTokenizer('qwen3');
    const { config, layout } = resolveRolloutConfig({ tokenizer, input: {} });
    const run = async (policy: typeof harborOraclePolicy) =>
      runEpisodes({
        episodes: tasks.map((task, i) => ({
          episodeId: `x${i}`,
          env: new HarborEnv({ task, exposeSolution: true }),
          seed: i,
        })),
        config,
        layout,
        actor: textPolicySampler({ tokenizer, policy, rng: new Rng(0) }),
      });
    expect(pass(await run(harborOraclePolicy))).toBe(1);
    expect(pass(await run(() => 'submit'))).toBe(0);
  });
});
