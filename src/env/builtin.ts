import { chunkSumFamily } from './chunk-sum.ts';
import type { TaskFamily } from './family.ts';
import { fogCourier } from './fog-courier/index.ts';
import { hopSearch } from './hop-search/index.ts';
import { kvLedger } from './kv-ledger/index.ts';
import { repoRepair } from './repo-repair/index.ts';
import { shellLedger } from './shell-ledger/index.ts';

/** The built-in long-horizon task suite in the word vocabulary (docs/tasks.md). */
export const BUILTIN_FAMILIES: readonly TaskFamily[] = [kvLedger, fogCourier, hopSearch];

/**
 * Task families that run in the shell sandbox (docs/harbor.md). Kept apart from the word suite:
 * their text needs a subword tokenizer, and their episodes need a sandbox.
 */
export const TERMINAL_FAMILIES: readonly TaskFamily[] = [shellLedger, repoRepair];

/** Every family the registry knows from the start: the suites above and the chunk-sum smoke task. */
export const KNOWN_FAMILIES: readonly TaskFamily[] = [...BUILTIN_FAMILIES, ...TERMINAL_FAMILIES, chunkSumFamily];
