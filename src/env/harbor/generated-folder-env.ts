import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import { removeTree, trackRoot, untrackRoot } from '../../sandbox/host-files.ts';
import type { EnvCallOptions, Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { parseKnobs } from '../knobs.ts';
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTask } from './load-tasks.ts';

/** What a generated family that runs as task folders gives its Environment. */
export interface GeneratedFolderFamily<Task, Knobs> {
  name: string;
  schema: z.ZodType<Knobs>;
  generate: (seed: number, knobs: Knobs) => Task;
  /** Writes the task as a Harbor task folder under `dir`, named `name`; returns `dir`. */
  writeTaskFolder: (dir: string, task: Task, name: string) => string;
  /** The family's limit on one shell command. */
  commandTimeoutSec: number;
}

/**
 * A generated family as an Environment (shell-ledger, repo-repair): reset(seed) generates the
 * task, writes it as a Harbor task folder, loads it with the Harbor loader and runs it in the
 * sandbox (harbor-env.ts: the verifier's files arrive only at submit); close() closes the sandbox
 * and deletes the folder. No extra action line: the instruction says how to act, and every token
 * counts in these families.
 */
export class GeneratedFolderEnv<Task, Knobs> implements Environment {
  readonly name: string;
  readonly knobs: Knobs;
  private inner: HarborEnv | null = null;
  private folder: string | null = null;
  private task: Task | null = null;

  constructor(
    private readonly family: GeneratedFolderFamily<Task, Knobs>,
    knobs: Partial<Knobs> = {},
  ) {
    this.name = family.name;
    this.knobs = parseKnobs({ family: family.name, schema: family.schema, input: knobs });
  }

  /** The current task (for tests and tools); throws before reset. */
  get current(): Task {
    if (!this.task) throw new Error(`${this.name}: call reset(seed) before reading the task`);
    return this.task;
  }

  async reset(seed: number, options?: EnvCallOptions): Promise<EnvReset> {
    const { name, generate, writeTaskFolder, commandTimeoutSec } = this.family;
    this.task = generate(seed, this.knobs);
    await this.close(); // a second reset replaces the first task's folder
    this.folder = mkdtempSync(join(tmpdir(), `crl-${name}-`));
    trackRoot(this.folder); // removed at exit if the process ends before close()
    const dir = writeTaskFolder(join(this.folder, `${name}-${seed}`), this.task, `${name}-${seed}`);
    this.inner = new HarborEnv({ task: loadHarborTask(dir), actionHint: false, commandTimeoutSec });
    return this.inner.reset(seed, options);
  }

  step(action: string, options?: EnvCallOptions): Promise<EnvStep> {
    if (!this.inner) throw new Error(`${this.name}: call reset(seed) first`);
    return this.inner.step(action, options);
  }

  async close(): Promise<void> {
    try {
      await this.inner?.close();
    } finally {
      if (this.folder) {
        removeTree(this.folder);
        untrackRoot(this.folder);
      }
      this.folder = null;
      this.inner = null;
    }
  }
}
