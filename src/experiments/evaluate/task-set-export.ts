import { existsSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { TaskFamily } from '../../env/family.ts';
import { removeTree } from '../../sandbox/host-files.ts';
import { ensureDir } from '../../util/atomic-write.ts';
import { evalTaskSeeds } from './eval-runner.ts';

/** The folder names `exportTaskSet` writes: `<family>-<seed>`, one per task. */
export function taskSetFolderNames(
  family: Pick<TaskFamily, 'name' | 'trainSeeds' | 'evalSeeds'>,
  o: TaskSetPart,
): string[] {
  return taskSetSeeds(family, o).map((seed) => `${family.name}-${seed}`);
}

/** Which tasks of a family a task set holds: `count` seeds of one split, from `offset` on. */
export interface TaskSetPart {
  split: 'train' | 'eval';
  count: number;
  offset?: number;
}

function taskSetSeeds(family: Pick<TaskFamily, 'trainSeeds' | 'evalSeeds'>, o: TaskSetPart): number[] {
  const range = o.split === 'eval' ? family.evalSeeds : family.trainSeeds;
  return evalTaskSeeds({ evalSeeds: range }, { tasks: o.count, offset: o.offset ?? 0 });
}

/**
 * Writes a generated family's tasks as Harbor task folders under `dir` (docs/harbor.md): what
 * `crl export-tasks` writes, and what a preset that trains on task folders writes into its
 * pipeline directory. The folders are written next to `dir` and renamed into place, so a crash
 * leaves either no set or a whole one; a `dir` that already holds exactly these folders is kept
 * (a resumed pipeline), since the family writes the same folder for the same seed and knobs.
 */
export function exportTaskSet(o: TaskSetPart & { family: TaskFamily; knobs: Record<string, unknown>; dir: string }): {
  dir: string;
  written: boolean;
} {
  const { family } = o;
  if (!family.writeTaskFolder)
    throw new Error(`task family ${family.name} runs in-process and has no task folders to write`);
  const names = taskSetFolderNames(family, o);
  if (existsSync(o.dir)) {
    const have = readdirSync(o.dir).sort();
    if (have.length === names.length && [...names].sort().every((n, i) => have[i] === n))
      return { dir: o.dir, written: false };
    throw new Error(
      `${o.dir} holds other files than the ${names.length} task folders it should; remove it to rewrite it`,
    );
  }
  const knobs = family.knobs.parse(o.knobs);
  ensureDir(dirname(o.dir));
  const tmp = `${o.dir}.partial-${process.pid}`;
  removeTree(tmp);
  ensureDir(tmp);
  const seeds = taskSetSeeds(family, o);
  seeds.forEach((seed, i) => family.writeTaskFolder!({ seed, knobs, dir: join(tmp, names[i]!) }));
  renameSync(tmp, o.dir);
  return { dir: o.dir, written: true };
}
