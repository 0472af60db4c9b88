import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEMP_PREFIX } from '../../sandbox/host-files.ts';
import { bwrapBackend } from '../../sandbox/bwrap-backend.ts';
import { childrenOf, openFdCount, processesWithArg } from '../../sandbox/testing/host-processes.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { Rng } from '../../util/random.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTask } from './load-tasks.ts';
import { harborOraclePolicy } from './oracle-policy.ts';
import { countLinesTask, writeTaskFolder, TASK_TOML } from './testing/task-folders.ts';

const available = sandboxAvailable('Harbor leak test');
const root = mkdtempSync(join(tmpdir(), 'crl-harbor-leaks-'));
// This test's sandboxes make their host directories here, not in the shared OS temp dir, so the
// count sees only what these episodes created (other processes' sandboxes come and go in tmpdir()).
// Searchable by the sandbox's user when the tests run as root (bwrap.ts sandboxHostIds).
const sandboxRoot = mkdtempSync(join(tmpdir(), 'crl-harbor-leaks-sandboxes-'));
chmodSync(sandboxRoot, 0o711);
const sandbox = bwrapBackend({ tempRoot: sandboxRoot });
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(sandboxRoot, { recursive: true, force: true });
});

const sandboxDirs = (): string[] => readdirSync(sandboxRoot).filter((n) => n.startsWith(TEMP_PREFIX));

describe.skipIf(!available)('many sandboxed episodes', () => {
  it('200 episodes, 16 sandboxes at a time, leave no process, file descriptor or temporary directory', async () => {
    const tasks = [
      loadHarborTask(countLinesTask(join(root, 'count'), 4)),
      // One that leaves a daemon and a background job behind, and one that fails to start.
      loadHarborTask(
        writeTaskFolder(join(root, 'daemon'), {
          'instruction.md': 'x',
          'task.toml': TASK_TOML,
          'tests/test.sh': 'echo 1 > /logs/verifier/reward.txt',
          'solution/solve.sh':
            'setsid sleep 98760101 >/dev/null 2>&1 & nohup sleep 98760102 >/dev/null 2>&1 &\necho started',
        }),
      ),
      loadHarborTask(
        writeTaskFolder(join(root, 'broken'), {
          'instruction.md': 'x',
          'task.toml': TASK_TOML,
          'environment/setup.sh': 'exit 5',
          'tests/test.sh': 'echo 1 > /logs/verifier/reward.txt',
          'solution/solve.sh': 'true',
        }),
      ),
    ];
    const tokenizer = loadTokenizer('qwen3');
    const { config, layout } = resolveRolloutConfig({
      tokenizer,
      input: { contextWindow: 4096, compactThreshold: 1024, maxObservationTokens: 256, maxActionTokens: 64 },
    });
    const before = { fds: openFdCount(), children: childrenOf(process.pid).length, dirs: sandboxDirs().length };
    const episodes = Array.from({ length: 200 }, (_, i) => ({
      episodeId: `leak-${i}`,
      env: new HarborEnv({ task: tasks[i % 3]!, exposeSolution: true, sandbox }),
      seed: i,
    }));
    const actor = textPolicySampler({ tokenizer, policy: harborOraclePolicy, rng: new Rng(0) });
    let mostDirs = 0; // the count must see the sandboxes while they are open, or it proves nothing
    const probe = setInterval(() => (mostDirs = Math.max(mostDirs, sandboxDirs().length)), 20);
    const records = await runEpisodes({ episodes, config, layout, actor, concurrency: 16 }).finally(() =>
      clearInterval(probe),
    );
    expect(before.dirs).toBe(0);
    expect(mostDirs).toBeGreaterThan(0);
    expect(records.filter((r) => r.outcome === 'success')).toHaveLength(134);
    expect(records.filter((r) => r.outcome === 'env-error')).toHaveLength(66);
    expect(records[2]!.events[0]).toMatchObject({
      during: 'reset',
      message: expect.stringContaining('setup.sh exited with 5'),
    });
    // The kernel tears pid namespaces down asynchronously: wait (with a deadline) for the counts to
    // come back; on a timeout the expectations below show what was left.
    const now = () => ({ fds: openFdCount(), children: childrenOf(process.pid).length, dirs: sandboxDirs().length });
    await waitFor(() => processesWithArg('9876010').length === 0 && JSON.stringify(now()) === JSON.stringify(before), {
      what: 'the processes, descriptors and directories the episodes used to go away',
      timeoutMs: 30_000,
    }).catch(() => {});
    expect(processesWithArg('9876010')).toEqual([]);
    expect(now()).toEqual(before);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
});
