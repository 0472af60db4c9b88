import { familyByName } from '../env/family-by-name.ts';
import { HarborTaskError } from '../env/harbor/load-tasks.ts';
import type { TaskFamily } from '../env/family.ts';
import { KnobsError, variantKnobs } from '../env/knobs.ts';
import { CliError } from './errors.ts';

/** Looks up --env (a family, or harbor:PATH); an unknown name is a user error listing the valid names. */
function familyFor(name: string): TaskFamily {
  try {
    return familyByName(name);
  } catch (e) {
    throw new CliError(`--env: ${(e as Error).message}`);
  }
}

/**
 * Checks --env, --knobs and (crl eval) --variant before any work starts: a bad name, knob or
 * variant is a user error naming its flag. The variant's overrides apply on top of the knobs.
 */
export function checkTask(options: { env: string; knobs: Record<string, unknown>; variant?: string }): TaskFamily {
  const family = familyFor(options.env);
  const variant = variantFor(family, options.variant ?? 'default');
  try {
    family.create({ ...options.knobs, ...variant }); // the family validates its knobs
  } catch (e) {
    // A task set also checks here that its sandbox can run: that is about --env, not the knobs.
    if (e instanceof HarborTaskError) throw new CliError(`--env ${options.env}: ${e.message}`);
    throw new CliError(`--knobs: ${(e as Error).message}`);
  }
  return family;
}

function variantFor(family: TaskFamily, name: string): Record<string, unknown> {
  try {
    return variantKnobs(family, name);
  } catch (e) {
    if (e instanceof KnobsError) throw new CliError(`--variant: ${e.problems.join('; ')}`);
    throw e;
  }
}
