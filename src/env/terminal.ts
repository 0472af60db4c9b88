import type { TaskFamily } from './family.ts';
import { familyNames, registerFamily } from './registry.ts';
import { shellLedger } from './shell-ledger/index.ts';

/**
 * Task families that run in the shell sandbox (docs/harbor.md). Kept apart from the built-in
 * word-vocabulary suite (builtin.ts): their text needs a subword tokenizer, and their episodes
 * need bubblewrap.
 */
export const TERMINAL_FAMILIES: readonly TaskFamily[] = [shellLedger];

/** Registers the terminal families once; calling it again is a no-op. */
export function registerTerminalFamilies(): void {
  const known = new Set(familyNames());
  for (const f of TERMINAL_FAMILIES) if (!known.has(f.name)) registerFamily(f);
}
