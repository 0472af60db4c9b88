import { SHELL_TOOLS } from '../action-tools.ts';
import type { TaskFamily } from '../family.ts';
import { makeSummaryWriters, summaryFactsOf } from '../summary-writers.ts';
import { RepoRepairEnv } from './env.ts';
import { repoRepairDense } from './dense.ts';
import { repoRepairExpert, repoRepairNeeded } from './expert.ts';
import { generateRepoRepair } from './generate.ts';
import { repoRepairKnobs, repoRepairVariants, type RepoRepairKnobs } from './knobs.ts';
import { writeTaskFolder } from './task-folder.ts';

/**
 * The rollout sizes repo-repair is made for, in Qwen3 tokens (docs/tasks.md): a test run's
 * output (about 150 tokens) fits one observation; a window holds the instruction or a summary,
 * a test run and about one more step, so every task needs two compactions, and the edit comes two
 * steps after the test run that said what the function should return: the expert passes with
 * null summaries in none of 40 evaluation seeds (1 at C = 600, 37 at C = 620, where a boundary
 * falls so that the runtime's two kept steps still hold the test run at the edit). Exported for
 * the preset.
 */
export const REPO_REPAIR_ROLLOUT = {
  contextWindow: 580,
  compactThreshold: 320,
  summaryMaxTokens: 64,
  maxActionTokens: 40,
  maxObservationTokens: 176,
} as const;

/** The software-engineering family (docs/tasks.md): fix a planted bug in a Python package, graded by its tests. */
export const repoRepair: TaskFamily<RepoRepairKnobs> = {
  name: 'repo-repair',
  description:
    'in a sandboxed shell, run a Python package’s pytest suite, find the function its failing test names, fix the wrong line; graded by FAIL_TO_PASS and PASS_TO_PASS tests',
  knobs: repoRepairKnobs,
  variants: repoRepairVariants,
  trainSeeds: { start: 0, end: 1_000_000 },
  evalSeeds: { start: 1_000_000, end: 1_010_000 },
  create: (knobs) => new RepoRepairEnv(knobs),
  expert: repoRepairExpert,
  tools: SHELL_TOOLS,
  summaryWriters: makeSummaryWriters(repoRepairNeeded),
  sft: { dense: (o) => repoRepairDense(o) },
  summaryFacts: summaryFactsOf(repoRepairNeeded),
  tokenizer: 'qwen3',
  maxConcurrentEpisodes: 32, // family.ts: each episode runs pytest in a sandbox
  rollout: REPO_REPAIR_ROLLOUT,
  writeTaskFolder: ({ seed, knobs, dir }) =>
    writeTaskFolder(dir, generateRepoRepair(seed, repoRepairKnobs.parse(knobs)), `repo-repair-${seed}`),
};

export { RepoRepairEnv } from './env.ts';
export { generateRepoRepair } from './generate.ts';
export type { RepoRepairTask } from './generate.ts';
export { repoRepairKnobs, repoRepairVariants } from './knobs.ts';
export type { RepoRepairKnobs } from './knobs.ts';
export { writeTaskFolder as writeRepoRepairFolder } from './task-folder.ts';
