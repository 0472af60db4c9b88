import type { EnvSpec, Environment } from '../contracts/index.ts';
import { getFamily } from './registry.ts';
import { harborEnvFromSpec } from './harbor/env-from-spec.ts';

/**
 * A fresh environment instance from its description (contracts/env-spec.ts), built where the
 * episode runs: the trainer's process, or a rollout worker's.
 */
export function createEnvironment(spec: EnvSpec): Environment {
  if (spec.kind === 'family') return getFamily(spec.family).create(spec.knobs);
  return harborEnvFromSpec(spec);
}
