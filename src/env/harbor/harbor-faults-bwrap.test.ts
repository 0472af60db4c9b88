import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../util/testing/wait-for.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { splitFaults } from '../../rollout/faults.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { parentOf, processesWithArg } from '../../sandbox/testing/host-processes.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { Rng } from '../../util/random.ts';
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTasks } from './load-tasks.ts';
import { harborOraclePolicy } from './oracle-policy.ts';
import { writeTaskFolder } from './testing/task-folders.ts';

/**
 * A bubblewrap sandbox killed from outside mid-episode (docs/faults.md): the episode is a sandbox
 * fault, never a reward-0 sample, and the batch it would have joined trains without it.
 */
const available = sandboxAvailable('sandbox faults on bwrap');
const root = mkdtempSync(join(tmpdir(), 'crl-bwrap-faults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TOML = '[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 30.0\n';
/** An argument no other process on the machine has: the killed task's sleep. */
const MARK = `${process.pid}${Date.now() % 100000}`;

/** The bwrap process above `pid` (its first ancestor whose command is bwrap), or null. */
function bwrapAbove(pid: number): number | null {
  for (let p: number | null = pid; p !== null && p > 1; p = parentOf(p)) {
    const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0] ?? '';
    if (/(^|\/)bwrap$/.test(cmd)) return p;
  }
  return null;
}

describe.skipIf(!available)('faults in bwrap sandboxes', () => {
  it('a sandbox SIGKILLed mid-episode is a sandbox fault, left out of the batch', async () => {
    const task = (name: string, solve: string) =>
      writeTaskFolder(join(root, 'suite', name), {
        'instruction.md': 'Write 1 to answer.txt.\n',
        'task.toml': TOML,
        'tests/test.sh':
          '#!/bin/bash\n[ "$(cat answer.txt)" = 1 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
        'solution/solve.sh': solve,
      });
    task('a-killed', `#!/bin/bash\nsleep ${MARK}\necho 1 > answer.txt\n`);
    task('b-passes', '#!/bin/bash\necho 1 > answer.txt\n');
    const tasks = loadHarborTasks(join(root, 'suite'));
    const tokenizer = loadTokenizer('qwen3');
    const { config, layout } = resolveRolloutConfig({ tokenizer, input: {} });
    const running = runEpisodes({
      episodes: tasks.map((t, i) => ({
        episodeId: `x${i}`,
        env: new HarborEnv({ task: t, exposeSolution: true }),
        seed: i,
      })),
      config,
      layout,
      actor: textPolicySampler({ tokenizer, policy: harborOraclePolicy, rng: new Rng(0) }),
    });
    // Kill the killed task's whole sandbox (its bwrap process) once its sleep runs.
    const bwrap = await waitFor(
      () => {
        const sleeper = processesWithArg(`sleep\0${MARK}`)[0];
        return sleeper === undefined ? null : bwrapAbove(sleeper);
      },
      { what: "the killed task's sleep", timeoutMs: 60_000, intervalMs: 100 },
    );
    process.kill(bwrap, 'SIGKILL');
    const records = await running;
    const [a, b] = records as [(typeof records)[0], (typeof records)[0]];
    expect(a.outcome).toBe('env-error');
    expect(a.events.find((e) => e.kind === 'env-error')).toMatchObject({ during: 'step', fault: 'sandbox' });
    expect(b.outcome).toBe('success');
    const split = splitFaults({ records, batchEpisodes: 2 });
    expect(split.trained.map((r) => r.episodeId)).toEqual(['x1']);
    expect(split.leftOut.map((r) => r.episodeId)).toEqual(['x0']);
  });
});
