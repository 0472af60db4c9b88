import { z } from 'zod';
import type { SandboxBackend } from './backend.ts';
import { bwrapBackend } from './bwrap-backend.ts';
import { dockerBackend } from './docker-backend.ts';

/**
 * Containers the docker backend keeps started ahead, at most, for the episodes announced next
 * (SandboxBackend.prepare; the runner announces as many as run at once). CRL_DOCKER_SPARES sets
 * another number (0: none).
 */
function dockerSpares(): number {
  const raw = process.env.CRL_DOCKER_SPARES;
  if (raw === undefined || raw === '') return 8;
  const n = z.coerce.number().int().min(0).max(64).safeParse(raw);
  if (!n.success) throw new Error(`CRL_DOCKER_SPARES=${raw}: expected a whole number from 0 to 64`);
  return n.data;
}

/** Sandbox backends by name (house style: registries, not branches). */
const BACKENDS: Record<string, () => SandboxBackend> = {
  bwrap: () => bwrapBackend(),
  docker: () => dockerBackend({ spares: dockerSpares() }),
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
