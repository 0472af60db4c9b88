import type { SandboxBackend } from './backend.ts';
import { bwrapBackend } from './bwrap-backend.ts';
import { dockerBackend } from './docker-backend.ts';

/**
 * Containers the docker backend starts ahead per task configuration, at most (as many as were
 * open at once): the next episodes' containers start while the current ones run.
 */
const DOCKER_SPARES = 4;

/** Sandbox backends by name (house style: registries, not branches). */
const BACKENDS: Record<string, () => SandboxBackend> = {
  bwrap: () => bwrapBackend(),
  docker: () => dockerBackend({ spares: DOCKER_SPARES }),
};

/** The backend of this name; an unknown name throws an error listing the valid ones. */
export function sandboxBackend(name: string): SandboxBackend {
  const make = BACKENDS[name];
  if (!make)
    throw new Error(
      `unknown sandbox backend ${JSON.stringify(name)}; valid names: ${sandboxBackendNames().join(', ')}`,
    );
  return make();
}

export function sandboxBackendNames(): string[] {
  return Object.keys(BACKENDS).sort();
}

/** The backend used when none is named. */
export const DEFAULT_SANDBOX_BACKEND = 'bwrap';
