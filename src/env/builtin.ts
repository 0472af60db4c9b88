import { chunkSumFamily } from './chunk-sum.ts';
import type { TaskFamily } from './family.ts';
import { fogCourier } from './fog-courier/index.ts';
import { hopSearch } from './hop-search/index.ts';
import { kvLedger } from './kv-ledger/index.ts';
import { familyNames, getFamily, registerFamily } from './registry.ts';
import { registerTerminalFamilies } from './terminal.ts';

/** The built-in long-horizon task suite (docs/tasks.md). */
export const BUILTIN_FAMILIES: readonly TaskFamily[] = [kvLedger, fogCourier, hopSearch];

/**
 * Registers the built-in suite and the chunk-sum smoke task once; calling it (or importing this
 * module) again is a no-op.
 */
export function registerBuiltinFamilies(): void {
  const known = new Set(familyNames());
  for (const f of [...BUILTIN_FAMILIES, chunkSumFamily]) if (!known.has(f.name)) registerFamily(f);
}

/**
 * The one family lookup of the CLI and the experiments: every built-in family, the terminal
 * families (terminal.ts) and any family registered before, by name; an unknown name throws an
 * error that lists the valid ones.
 */
export function taskFamily(name: string): TaskFamily {
  registerBuiltinFamilies();
  registerTerminalFamilies();
  return getFamily(name);
}

registerBuiltinFamilies();
