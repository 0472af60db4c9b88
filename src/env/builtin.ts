import type { TaskFamily } from './family.ts';
import { fogCourier } from './fog-courier/index.ts';
import { hopSearch } from './hop-search/index.ts';
import { kvLedger } from './kv-ledger/index.ts';
import { familyNames, registerFamily } from './registry.ts';

/** The built-in long-horizon task suite (docs/tasks.md). */
export const BUILTIN_FAMILIES: readonly TaskFamily[] = [kvLedger, fogCourier, hopSearch];

/** Registers every built-in family once; calling it (or importing this module) again is a no-op. */
export function registerBuiltinFamilies(): void {
  const known = new Set(familyNames());
  for (const f of BUILTIN_FAMILIES) if (!known.has(f.name)) registerFamily(f);
}

registerBuiltinFamilies();
