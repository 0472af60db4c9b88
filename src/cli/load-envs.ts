import { registerBuiltinFamilies } from '../env/builtin.ts';
import { familyNames, getFamily, registerFamily } from '../env/registry.ts';
import type { TaskFamily } from '../env/family.ts';
import { chunkSumFamily } from '../rollout/testing/chunk-sum.ts';
import { CliError } from './errors.ts';

/** Registers the task families the CLI knows: the built-in suite and the runtime's chunk-sum smoke task. */
export function loadFamilies(): void {
  registerBuiltinFamilies();
  if (!familyNames().includes(chunkSumFamily.name)) registerFamily(chunkSumFamily);
}

/** Looks up --env; an unknown name is a user error listing the valid names. */
export function familyFor(name: string): TaskFamily {
  try {
    return getFamily(name);
  } catch (e) {
    throw new CliError(`--env: ${(e as Error).message}`);
  }
}

/** Checks --env and --knobs before any work starts (a bad name or knob is a user error naming its flag). */
export function checkTask(options: { env: string; knobs: Record<string, unknown> }): TaskFamily {
  loadFamilies();
  const family = familyFor(options.env);
  try {
    family.create(options.knobs); // the family validates its knobs
  } catch (e) {
    throw new CliError(`--knobs: ${(e as Error).message}`);
  }
  return family;
}
