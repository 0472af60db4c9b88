import type { EnvSpec } from '../../contracts/index.ts';
import { sandboxBackend } from '../../sandbox/registry.ts';
import { HarborEnv } from './harbor-env.ts';
import { loadHarborTask } from './load-tasks.ts';

/**
 * The environment of one task folder from its description (contracts/env-spec.ts). The folder is
 * loaded (and checked) here, where the episode runs, so a rollout worker reads it from its own
 * file system.
 */
export function harborEnvFromSpec(spec: Extract<EnvSpec, { kind: 'harbor' }>): HarborEnv {
  return new HarborEnv({
    task: loadHarborTask(spec.taskDir),
    exposeSolution: spec.exposeSolution,
    ...(spec.commandTimeoutSec !== undefined ? { commandTimeoutSec: spec.commandTimeoutSec } : {}),
    ...(spec.outputBytes !== undefined ? { outputBytes: spec.outputBytes } : {}),
    ...(spec.sandbox !== undefined ? { sandbox: sandboxBackend(spec.sandbox) } : {}),
  });
}
