import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { iterationDirName, RUN_FILES } from '../../report/run-files.ts';
import { fsyncDir, writeFileAtomic } from '../../util/atomic-write.ts';

/**
 * Atomic checkpoint directories for resume. The contents are written by a callback (the model's
 * checkpoint format, src/model/formats/checkpoint.ts) into a temp dir; the store renames it into place and
 * then replaces checkpoints/latest.json atomically. A kill -9 at any instant therefore leaves the
 * previous or the new checkpoint as "latest", never a half-written one; temp dirs left by a crash
 * are removed on the next load.
 *   checkpoints/iter-NNNNNN/...      one complete checkpoint per saved iteration
 *   checkpoints/latest.json          { iteration, dir }
 */
const LatestSchema = z.object({ iteration: z.number().int().nonnegative(), dir: z.string() }).strict();

export function checkpointsDir(runDir: string): string {
  return join(runDir, RUN_FILES.checkpoints);
}

export async function saveCheckpointDir(options: {
  runDir: string;
  iteration: number;
  write: (dir: string) => Promise<void> | void;
}): Promise<string> {
  const root = checkpointsDir(options.runDir);
  mkdirSync(root, { recursive: true });
  const name = iterationDirName(options.iteration);
  const tmp = join(root, `.tmp-${name}-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  await options.write(tmp);
  fsyncDir(tmp);
  const final = join(root, name);
  rmSync(final, { recursive: true, force: true }); // an iteration rerun after resume replaces its stale copy
  renameSync(tmp, final);
  fsyncDir(root);
  writeFileAtomic(join(root, RUN_FILES.latest), JSON.stringify({ iteration: options.iteration, dir: name }));
  return final;
}

/** The latest complete checkpoint, or null when the run has none yet. Cleans crash leftovers. */
export function latestCheckpoint(runDir: string): { iteration: number; dir: string } | null {
  const root = checkpointsDir(runDir);
  if (!existsSync(root)) return null;
  for (const f of readdirSync(root)) if (f.includes('.tmp-')) rmSync(join(root, f), { recursive: true, force: true });
  const latestPath = join(root, RUN_FILES.latest);
  if (!existsSync(latestPath)) return null;
  const latest = LatestSchema.parse(JSON.parse(readFileSync(latestPath, 'utf8')));
  const dir = join(root, latest.dir);
  if (!existsSync(dir))
    throw new Error(`${latestPath} points at ${latest.dir}, which is missing; the run directory was edited by hand`);
  return { iteration: latest.iteration, dir };
}

/**
 * The iteration of the latest complete checkpoint, or null; read only (unlike latestCheckpoint it
 * leaves temp dirs alone, since a run still training may be writing one).
 */
export function latestIteration(runDir: string): number | null {
  const path = join(checkpointsDir(runDir), RUN_FILES.latest);
  if (!existsSync(path)) return null;
  const r = LatestSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  return r.success ? r.data.iteration : null;
}
