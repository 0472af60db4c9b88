import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTree } from '../../sandbox/host-files.ts';
import type { EnvCallOptions, Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { HarborEnv } from '../harbor/harbor-env.ts';
import { loadHarborTask } from '../harbor/load-tasks.ts';
import { parseKnobs } from '../knobs.ts';
import { generateShellLedger, type ShellLedgerTask } from './generate.ts';
import { shellLedgerKnobs, type ShellLedgerKnobs } from './knobs.ts';
import { writeTaskFolder } from './task-folder.ts';

/**
 * shell-ledger as an Environment: reset(seed) generates the task, writes it as a Harbor task
 * folder, loads it with the Harbor loader and runs it in the sandbox (harbor-env.ts); close()
 * closes the sandbox and deletes the folder.
 */
export class ShellLedgerEnv implements Environment {
  readonly name = 'shell-ledger';
  readonly knobs: ShellLedgerKnobs;
  private inner: HarborEnv | null = null;
  private folder: string | null = null;
  private task: ShellLedgerTask | null = null;

  constructor(knobs: Partial<ShellLedgerKnobs> = {}) {
    this.knobs = parseKnobs({ family: 'shell-ledger', schema: shellLedgerKnobs, input: knobs });
  }

  /** The current task (for tests and tools); throws before reset. */
  get current(): ShellLedgerTask {
    if (!this.task) throw new Error('shell-ledger: call reset(seed) before reading the task');
    return this.task;
  }

  async reset(seed: number, options?: EnvCallOptions): Promise<EnvReset> {
    this.task = generateShellLedger(seed, this.knobs);
    this.folder = mkdtempSync(join(tmpdir(), 'crl-shell-ledger-'));
    const dir = writeTaskFolder(join(this.folder, `shell-ledger-${seed}`), this.task, `shell-ledger-${seed}`);
    // No extra action line: the instruction says how to act, and every token counts in this family.
    this.inner = new HarborEnv({ task: loadHarborTask(dir), actionHint: false, commandTimeoutSec: 20 });
    return this.inner.reset(seed, options);
  }

  step(action: string, options?: EnvCallOptions): Promise<EnvStep> {
    if (!this.inner) throw new Error('shell-ledger: call reset(seed) first');
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
