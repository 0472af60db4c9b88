import type { EnvSpec, Environment } from '../contracts/index.ts';
import { sandboxBackend } from '../sandbox/registry.ts';
import { getFamily } from './registry.ts';
import { HarborEnv } from './harbor/harbor-env.ts';
import { loadHarborTask } from './harbor/load-tasks.ts';

/**
 * A fresh environment instance from its description (contracts/env-spec.ts), built where the
 * episode runs: the trainer's process, or a rollout worker's. Task folders are loaded (and
 * checked) here, so a worker reads them from its own file system.
 */
export function createEnvironment(spec: EnvSpec): Environment {
  if (spec.kind === 'family') return getFamily(spec.family).create(spec.knobs);
  return new HarborEnv({
    task: loadHarborTask(spec.taskDir),
    exposeSolution: spec.exposeSolution,
    ...(spec.commandTimeoutSec !== undefined ? { commandTimeoutSec: spec.commandTimeoutSec } : {}),
    ...(spec.outputBytes !== undefined ? { outputBytes: spec.outputBytes } : {}),
    ...(spec.sandbox !== undefined ? { sandbox: sandboxBackend(spec.sandbox) } : {}),
  });
}
