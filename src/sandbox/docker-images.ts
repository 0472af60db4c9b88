import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { docker, DockerError, SANDBOX_LABEL } from './docker-cli.ts';
import { runLabelArgs, runTagSuffix } from './docker-run-scope.ts';
import { engine, text } from './docker/engine-api.ts';

/**
 * Images for the Docker backend (docs/sandbox.md): a build context (a task's environment/) is
 * built once per content and tagged with its hash, so a second episode, a second run or a second
 * worker on the same daemon reuses it; images other tools made (a task's `docker_image`) are used
 * as they are when present.
 */

/** sha256 over a tree's relative paths, file modes, link targets and file bytes, in sorted order. */
export function treeHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = join(rel, name);
      const st = lstatSync(join(dir, path));
      h.update(`${path}\0${st.mode & 0o7777}\0${st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'f'}\0`);
      if (st.isDirectory()) walk(path);
      else if (st.isSymbolicLink()) h.update(readlinkSync(join(dir, path)));
      else h.update(readFileSync(join(dir, path)));
      h.update('\0');
    }
  };
  walk('');
  return h.digest('hex');
}

/** The same, blocking: for checks made once before anything runs (a CLI's notes, a test's skip). */
export function imagePresentSync(image: string): boolean {
  return spawnSync('docker', ['image', 'inspect', image], { stdio: 'ignore', timeout: 30_000 }).status === 0;
}

export async function imagePresent(image: string): Promise<boolean> {
  return (await inspectImage(image)) !== null;
}

/** The image's WORKDIR ('/' when it sets none): where Harbor's agent and verifier start. */
export async function imageWorkdir(image: string): Promise<string> {
  const found = await inspectImage(image);
  if (found === null) throw new DockerError(`the image ${image} is not there`);
  return found.Config?.WorkingDir || '/';
}

const ImageSchema = z.object({ Config: z.object({ WorkingDir: z.string().optional() }).nullish() });

/** The daemon's record of an image (over its API: no client process), or null when it has none. */
async function inspectImage(image: string): Promise<z.infer<typeof ImageSchema> | null> {
  const r = await engine({ method: 'GET', path: `/images/${encodeURIComponent(image)}/json`, timeoutMs: 30_000 });
  if (r.status === 404) return null;
  if (r.status !== 200) throw new DockerError(`inspecting the image ${image} failed: ${r.status} ${text(r.body)}`);
  return ImageSchema.parse(JSON.parse(r.body.toString('utf8')));
}

export interface BuiltImage {
  image: string;
  /** built: this call built it; cached: an earlier build of the same content. */
  source: 'built' | 'cached';
  seconds: number;
}

const building = new Map<string, Promise<BuiltImage>>();

/**
 * The image built from `contextDir` (its Dockerfile), tagged `<repo>:<content hash>` (with the run's
 * suffix under CRL_DOCKER_RUN, docker-run-scope.ts); built only when no image of that tag exists. Concurrent calls for the same content share one build.
 * `network` is the build's network (`docker build --network`; default: the daemon's).
 */
export function buildImage(options: {
  contextDir: string;
  repo: string;
  timeoutMs: number;
  network?: string | undefined;
}): Promise<BuiltImage> {
  const tag = `${options.repo}:${treeHash(options.contextDir).slice(0, 16)}${runTagSuffix()}`;
  let p = building.get(tag);
  if (!p) {
    p = build(tag, options).finally(() => building.delete(tag));
    building.set(tag, p);
  }
  return p;
}

async function build(
  tag: string,
  options: { contextDir: string; timeoutMs: number; network?: string | undefined },
): Promise<BuiltImage> {
  const t0 = Date.now();
  if (await imagePresent(tag)) return { image: tag, source: 'cached', seconds: 0 };
  const r = await docker(
    [
      'build',
      '--quiet',
      '--tag',
      tag,
      '--label',
      `${SANDBOX_LABEL}.image=1`,
      ...runLabelArgs(),
      ...(options.network ? ['--network', options.network] : []),
      options.contextDir,
    ],
    { timeoutMs: options.timeoutMs },
  );
  if (r.code !== 0) {
    const why = r.timedOut
      ? `timed out after ${Math.round(options.timeoutMs / 1000)} s ([environment] build_timeout_sec)`
      : r.stderr.split('\n').slice(-12).join('\n');
    throw new DockerError(`docker build of ${options.contextDir} failed: ${why}`);
  }
  return { image: tag, source: 'built', seconds: (Date.now() - t0) / 1000 };
}
