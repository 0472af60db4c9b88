import { join } from 'node:path';
import { docker, DockerError, dockerNetworkExists } from '../../sandbox/docker-cli.ts';
import { buildImage, imagePresent, imageWorkdir } from '../../sandbox/docker-images.ts';
import type { HarborTask } from './load-tasks.ts';

/**
 * A task's container image and network for the docker sandbox (docs/harbor.md), as Harbor
 * chooses them: `[environment] docker_image` when the daemon has it or can pull it, else the
 * image built from environment/Dockerfile (once per content, docker-images.ts); the working
 * directory is `[environment] workdir` or the image's WORKDIR. The network is given when the task
 * allows internet (`allow_internet`, default true; or `network_mode` other than no-network) and
 * the daemon has a bridge network; otherwise none, with a note saying so. The build obeys the
 * same rule (buildNetwork): a task without internet is built with no network at all.
 */
export interface TaskNetwork {
  /** docker run --network. */
  given: 'bridge' | 'none';
  /** Set when the task asked for a network this daemon cannot give. */
  note: string | null;
}

export interface TaskImage {
  image: string;
  workdir: string;
  network: TaskNetwork;
}

/** Whether the task asks for internet, Harbor's way. */
export function asksForNetwork(task: HarborTask): boolean {
  const env = task.config.environment;
  if (env.network_mode !== undefined) return env.network_mode !== 'no-network';
  return env.allow_internet !== false;
}

export function taskNetwork(task: HarborTask): TaskNetwork {
  if (!asksForNetwork(task)) return { given: 'none', note: null };
  if (dockerNetworkExists('bridge')) return { given: 'bridge', note: null };
  return {
    given: 'none',
    note: 'the task allows internet, but this Docker daemon has no bridge network, so it ran without one (a verifier that downloads its tools fails for that reason, not for a wrong answer)',
  };
}

/**
 * `docker build --network` for a task. Without internet: none, whatever the daemon or
 * CRL_DOCKER_BUILD_NETWORK say (a build must not reach the host's loopback or anything else; if
 * the daemon cannot build that way the build fails, saying so). With internet: the daemon's
 * default, or CRL_DOCKER_BUILD_NETWORK; a daemon without a bridge network (dockerd --bridge
 * none) builds with the host's, as the task allowed internet.
 */
export function buildNetwork(task: HarborTask): string | undefined {
  if (!asksForNetwork(task)) return 'none';
  return process.env.CRL_DOCKER_BUILD_NETWORK ?? (dockerNetworkExists('bridge') ? undefined : 'host');
}

/** Process-wide: a task's image is resolved once, whatever number of episodes run it. */
const resolved = new Map<string, Promise<{ image: string; workdir: string }>>();

export async function taskImage(task: HarborTask): Promise<TaskImage> {
  let p = resolved.get(task.dir);
  if (!p) {
    p = resolveImage(task);
    resolved.set(task.dir, p);
    p.catch(() => resolved.delete(task.dir)); // a failed build is tried again by the next episode
  }
  const { image, workdir } = await p;
  return { image, workdir, network: taskNetwork(task) };
}

async function resolveImage(task: HarborTask): Promise<{ image: string; workdir: string }> {
  const env = task.config.environment;
  const named = env.docker_image;
  let image: string | null = null;
  if (named !== undefined) {
    // Harbor's order: the prebuilt image (present, else pulled), and the Dockerfile only without it.
    if (await imagePresent(named)) image = named;
    else {
      const pull = await docker(['pull', '--quiet', named], { timeoutMs: env.build_timeout_sec * 1000 });
      if (pull.code === 0) image = named;
      else if (!task.dockerfile) {
        throw new DockerError(
          `${task.dir}: [environment] docker_image ${named} is not present and could not be pulled (${pull.stderr.split('\n')[0]}); the folder has no Dockerfile to build instead`,
        );
      }
    }
  }
  if (image === null) {
    const network = buildNetwork(task);
    try {
      const built = await buildImage({
        contextDir: join(task.dir, 'environment'),
        repo: taskImageRepo(task),
        timeoutMs: env.build_timeout_sec * 1000,
        network,
      });
      image = built.image;
    } catch (e) {
      if (network !== 'none' || !(e instanceof DockerError)) throw e;
      throw new DockerError(
        `${e.message}\n(built with --network none because the task allows no internet; a build that needs the network cannot run for it, and is never given the host's instead)`,
      );
    }
  }
  const workdir =
    typeof env.workdir === 'string' && env.workdir.startsWith('/') ? env.workdir : await imageWorkdir(image);
  return { image, workdir };
}

/** The repository name a task's built image is tagged under (`crl-task/<task>:<content hash>`). */
export function taskImageRepo(task: HarborTask): string {
  const name = task.name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '');
  return `crl-task/${name || 'task'}`;
}

/** Which image a task will run, in words, before it runs (a user with a registry pulls; offline, one builds). */
export function describeTaskImage(task: HarborTask, present: (image: string) => boolean): string {
  const named = task.config.environment.docker_image;
  if (named !== undefined && present(named)) return `image ${named} (present)`;
  const build = `an image built from environment/Dockerfile (${taskImageRepo(task)}:<content hash>)`;
  if (named !== undefined)
    return task.dockerfile ? `image ${named} if it can be pulled, else ${build}` : `image ${named} (to be pulled)`;
  return build;
}
