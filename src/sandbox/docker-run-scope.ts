import { hostname } from 'node:os';
import { z } from 'zod';
import { docker } from './docker-cli.ts';
import { ownerAlive } from './stale-dirs.ts';

/**
 * The run that owns a container or image (docs/testing.md): a test suite or CI run sets
 * CRL_DOCKER_RUN to `<host>/<pid>.<start>` of its own long-lived process (stale-dirs.ts's owner
 * tag), and every container and image made under it carries that value as a label. At its end the
 * run removes what carries its label; the next run on the same daemon removes what carries the
 * label of a run whose process is gone (a killed suite). Runs that are alive, on this host or
 * another one sharing the daemon, are never touched. Without CRL_DOCKER_RUN nothing changes: a
 * user's images stay as the cache they are meant to be.
 */
export const RUN_LABEL = 'org.compaction-rl.run';

const RunSchema = z.string().regex(/^[A-Za-z0-9._-]+\/\d+\.\d+$/, 'expected <host>/<pid>.<start>');

/** The run named by CRL_DOCKER_RUN, or null when unset; a malformed value is an error, not ignored. */
export function dockerRun(): string | null {
  const raw = process.env.CRL_DOCKER_RUN;
  if (raw === undefined || raw === '') return null;
  const parsed = RunSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`CRL_DOCKER_RUN=${raw}: ${parsed.error.issues[0]?.message ?? 'malformed'}`);
  return parsed.data;
}

/** The run value for a process of this host (what a suite or CI run exports as CRL_DOCKER_RUN). */
export function runOf(tag: string): string {
  return `${hostname()}/${tag}`;
}

/** `--label` arguments for `docker run`/`create`/`build` under the current run (none without one). */
export function runLabelArgs(): string[] {
  return Object.entries(runLabels()).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
}

/** The same as the engine API's `Labels` (a container created over the API). */
export function runLabels(): Record<string, string> {
  const run = dockerRun();
  return run === null ? {} : { [RUN_LABEL]: run };
}

/**
 * Appended to a built image's tag under a run, so two runs sharing a daemon never use (and then
 * remove) each other's image; within a run the content-hash cache works as without one.
 */
export function runTagSuffix(): string {
  const run = dockerRun();
  return run === null ? '' : `-run${run.slice(run.indexOf('/') + 1)}`;
}

export interface RunResources {
  containers: string[];
  images: string[];
}

/** Containers and images (ids) labelled with a run, and the run each names. */
async function labelled(): Promise<{ containers: [string, string][]; images: [string, string][] }> {
  const ps = await docker([
    'ps',
    '-a',
    '--filter',
    `label=${RUN_LABEL}`,
    '--format',
    `{{.ID}} {{.Label "${RUN_LABEL}"}}`,
  ]);
  const ids = await docker(['images', '-q', '--no-trunc', '--filter', `label=${RUN_LABEL}`]);
  const imageIds = [...new Set(ids.stdout.toString('utf8').split('\n').filter(Boolean))];
  const inspected =
    imageIds.length === 0
      ? ''
      : (
          await docker(['image', 'inspect', '--format', `{{.Id}} {{index .Config.Labels "${RUN_LABEL}"}}`, ...imageIds])
        ).stdout.toString('utf8');
  const pairs = (text: string): [string, string][] =>
    text
      .split('\n')
      .map((l) => l.trim().split(' '))
      .filter((p): p is [string, string] => p.length === 2 && p[0] !== '' && p[1] !== '');
  return { containers: pairs(ps.stdout.toString('utf8')), images: pairs(inspected) };
}

/** Removes the containers, then the images, whose run label passes `doomed`; returns their ids. */
async function removeWhere(doomed: (run: string) => boolean): Promise<RunResources> {
  const found = await labelled();
  const containers = found.containers.filter(([, run]) => doomed(run)).map(([id]) => id);
  if (containers.length > 0) await docker(['rm', '-f', ...containers], { timeoutMs: 120_000 });
  const images = found.images.filter(([, run]) => doomed(run)).map(([id]) => id);
  if (images.length > 0) await docker(['rmi', '-f', ...images], { timeoutMs: 120_000 });
  return { containers, images };
}

/** Removes everything labelled with `run` (a suite's own teardown). */
export function removeRun(run: string): Promise<RunResources> {
  return removeWhere((r) => r === run);
}

/** Removes everything of this host's runs whose owning process is gone; other hosts' runs are left alone. */
export function sweepDeadRuns(): Promise<RunResources> {
  const host = hostname();
  return removeWhere((run) => {
    const slash = run.indexOf('/');
    return run.slice(0, slash) === host && !ownerAlive(run.slice(slash + 1));
  });
}
