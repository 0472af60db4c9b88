import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { JobRefused } from '../../queue/job-refusal.ts';

/**
 * What a rollout worker agrees to run whatever a job says (docs/distributed.md, "Who chooses what
 * a worker runs"): task folders only under the root it was started with (`crl worker
 * --task-root`), engines only on its allow list (`--allow-engines`) when it has one. These hold
 * with or without the queue's secret: the secret says who sent a job, the bounds say what this
 * machine lends to anyone who may send one.
 */
export interface WorkerBounds {
  /** The real path of the folder task folders must lie under; null: this worker takes no task folders. */
  taskRoot: string | null;
  /** The engine URLs a job may name (normalized, see engineKey); null: any the job names. */
  engines: ReadonlySet<string> | null;
}

/** The task folder a job names, as its real path, once it is known to lie under the root; JobRefused otherwise. */
export function taskDirInRoot(taskDir: string, root: string | null): string {
  if (root === null)
    throw new JobRefused(
      `the job names a task folder (${taskDir}), and this worker takes none: start it with --task-root DIR, the folder its task folders lie under`,
    );
  if (!isAbsolute(taskDir)) throw new JobRefused(`the job's task folder ${taskDir} is not an absolute path`);
  const outside = (p: string) => {
    const rel = relative(root, p);
    return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  };
  // Checked before and after resolving links: `..` cannot climb out, nor a link point out.
  if (outside(resolve(taskDir)))
    throw new JobRefused(`the job's task folder ${taskDir} is outside --task-root ${root}`);
  let real: string;
  try {
    real = realpathSync(taskDir);
  } catch {
    // Only the root's own contents are named: a missing folder is refused like an outside one,
    // so a job cannot probe which paths exist on this machine.
    throw new JobRefused(`the job's task folder ${taskDir} does not exist under --task-root ${root}`);
  }
  if (outside(real))
    throw new JobRefused(`the job's task folder ${taskDir} leads outside --task-root ${root} through a link`);
  return real;
}

/** One engine URL as compared with the allow list: the parsed URL without a trailing slash. */
export function engineKey(url: string): string {
  try {
    return new URL(url).href.replace(/\/+$/, '');
  } catch {
    return url;
  }
}

/** JobRefused unless every URL is on the allow list (null: no list, any URL). */
export function checkEngines(urls: readonly string[], allowed: ReadonlySet<string> | null): void {
  if (allowed === null) return;
  const off = urls.filter((u) => !allowed.has(engineKey(u)));
  if (off.length > 0)
    throw new JobRefused(
      `the job names engine(s) this worker may not reach: ${off.join(', ')} (not on its --allow-engines)`,
    );
}
