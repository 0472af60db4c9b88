import { dockerUnavailableReason } from '../../sandbox/docker-cli.ts';
import { BWRAP_SUPPORTED, HarborTaskError, type HarborTask } from './load-tasks.ts';

/**
 * Which sandbox backend runs a task folder (docs/harbor.md): `--sandbox docker|bwrap|auto`.
 * docker needs an image (environment/Dockerfile or [environment] docker_image); bwrap needs a task
 * without build files, or with environment/setup.sh standing in for them; auto takes docker for a
 * task with an image when a daemon answers, else bwrap, and otherwise refuses with both reasons.
 */
export const SANDBOX_CHOICES = ['auto', 'docker', 'bwrap'] as const;
export type SandboxChoice = (typeof SANDBOX_CHOICES)[number];

export function hasImage(task: HarborTask): boolean {
  return task.dockerfile || task.config.environment.docker_image !== undefined;
}

function bwrapCan(task: HarborTask): boolean {
  return task.buildFiles.length === 0 || task.setupScript !== null;
}

/** The backend name for this task, or a HarborTaskError saying why none can run it. */
export function taskSandbox(task: HarborTask, choice: SandboxChoice): 'docker' | 'bwrap' {
  if (choice === 'docker') {
    if (!hasImage(task)) {
      throw new HarborTaskError(
        `${task.dir}: --sandbox docker needs environment/Dockerfile or [environment] docker_image; this task has neither (use the bwrap sandbox)`,
      );
    }
    return 'docker';
  }
  if (choice === 'auto' && hasImage(task) && dockerUnavailableReason() === null) return 'docker';
  if (bwrapCan(task)) return 'bwrap';
  const first = task.buildFiles[0] ?? 'Dockerfile';
  const docker = dockerUnavailableReason();
  throw new HarborTaskError(
    `${task.dir}: environment/${first} needs a container engine` +
      (choice === 'bwrap' ? ' (--sandbox docker)' : docker ? `, and ${docker}` : '') +
      `. ${BWRAP_SUPPORTED}`,
  );
}
