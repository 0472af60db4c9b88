import type { TaskFamily } from './family.ts';
import { harborTaskSet, isHarborEnv } from './harbor/task-set.ts';
import { getFamily } from './registry.ts';

/**
 * What `--env` names: a registered family (env/registry.ts), or `harbor:PATH`, a folder of
 * Harbor task folders as a family (env/harbor/task-set.ts), loaded and checked on every call so
 * a changed folder is read afresh.
 */
export function familyByName(name: string): TaskFamily {
  return isHarborEnv(name) ? harborTaskSet(name) : getFamily(name);
}
