import type { TaskFamily } from '../env/family.ts';
import { familyNames, getFamily, registerFamily } from '../env/registry.ts';
import { chunkSumFamily } from '../rollout/testing/chunk-sum.ts';

/**
 * Family lookup for experiments. The runtime's smoke task 'chunk-sum' is always available so the
 * CLI can be smoke-tested in seconds; the built-in suite registers itself in src/env/builtin.ts.
 */
let loaded = false;

export async function loadTaskFamilies(): Promise<void> {
  if (loaded) return;
  loaded = true;
  if (!familyNames().includes(chunkSumFamily.name)) registerFamily(chunkSumFamily);
  try {
    // A computed specifier: the module may not exist yet in this tree (tsc must not require it).
    await import(new URL('../env/builtin.ts', import.meta.url).href);
  } catch (e) {
    // Only a missing module is tolerated (the suite lands separately); real import errors surface.
    if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
  }
}

export async function taskFamily(name: string): Promise<TaskFamily> {
  await loadTaskFamilies();
  return getFamily(name);
}
