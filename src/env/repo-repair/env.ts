import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTree } from '../../sandbox/host-files.ts';
import type { EnvCallOptions, Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { HarborEnv } from '../harbor/harbor-env.ts';
import { loadHarborTask } from '../harbor/load-tasks.ts';
import { parseKnobs } from '../knobs.ts';
import { generateRepoRepair, type RepoRepairTask } from './generate.ts';
import { repoRepairKnobs, type RepoRepairKnobs } from './knobs.ts';
import { writeTaskFolder } from './task-folder.ts';

/**
 * repo-repair as an Environment: reset(seed) generates the task, writes it as a Harbor task
 * folder, loads it with the Harbor loader and runs it in the sandbox (harbor-env.ts: the
 * verifier's files, the pristine tests among them, arrive only at submit); close() closes the
 * sandbox and deletes the folder.
 */
export class RepoRepairEnv implements Environment {
  readonly name = 'repo-repair';
  readonly knobs: RepoRepairKnobs;
  private inner: HarborEnv | null = null;
  private folder: string | null = null;
  private task: RepoRepairTask | null = null;

  constructor(knobs: Partial<RepoRepairKnobs> = {}) {
    this.knobs = parseKnobs({ family: 'repo-repair', schema: repoRepairKnobs, input: knobs });
  }

  /** The current task (for tests and tools); throws before reset. */
  get current(): RepoRepairTask {
    if (!this.task) throw new Error('repo-repair: call reset(seed) before reading the task');
    return this.task;
  }

  async reset(seed: number, options?: EnvCallOptions): Promise<EnvReset> {
    this.task = generateRepoRepair(seed, this.knobs);
    this.folder = mkdtempSync(join(tmpdir(), 'crl-repo-repair-'));
    const dir = writeTaskFolder(join(this.folder, `repo-repair-${seed}`), this.task, `repo-repair-${seed}`);
    this.inner = new HarborEnv({ task: loadHarborTask(dir), actionHint: false, commandTimeoutSec: 30 });
    return this.inner.reset(seed, options);
  }

  step(action: string, options?: EnvCallOptions): Promise<EnvStep> {
    if (!this.inner) throw new Error('repo-repair: call reset(seed) first');
    return this.inner.step(action, options);
  }

  async close(): Promise<void> {
    try {
      await this.inner?.close();
    } finally {
      if (this.folder) removeTree(this.folder);
      this.folder = null;
    }
  }
}
