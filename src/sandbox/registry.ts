import type { SandboxBackend } from './backend.ts';
import { bwrapBackend } from './bwrap-backend.ts';
import { dockerBackend } from './docker-backend.ts';

/** Sandbox backends by name (house style: registries, not branches). */
const BACKENDS: Record<string, () => SandboxBackend> = {
  bwrap: () => bwrapBackend(),
  docker: () => dockerBackend(),
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
