import { SHELL_TOOLS } from '../action-tools.ts';
import type { TaskFamily } from '../family.ts';
import { makeSummaryWriters, summaryFactsOf } from '../summary-writers.ts';
import { shellLedgerDense } from './dense.ts';
import { ShellLedgerEnv } from './env.ts';
import { generateShellLedger } from './generate.ts';
import { writeTaskFolder } from './task-folder.ts';
import { shellLedgerExpert, shellLedgerNeeded } from './expert.ts';
import { shellLedgerKnobs, shellLedgerVariants, type ShellLedgerKnobs } from './knobs.ts';

/** The terminal family (docs/tasks.md, docs/harbor.md): a change log read part by part in a real shell. */
/**
 * The rollout sizes shell-ledger is made for, in Qwen3 tokens (docs/tasks.md): about three log
 * parts fit a window. Exported for the `terminal` preset.
 */
export const SHELL_LEDGER_ROLLOUT = {
  contextWindow: 512,
  compactThreshold: 224,
  summaryMaxTokens: 96,
  maxActionTokens: 24,
  maxObservationTokens: 64,
} as const;

export const shellLedger: TaskFamily<ShellLedgerKnobs> = {
  name: 'shell-ledger',
  description:
    'in a sandboxed shell, cat the parts of a change log in order and write the final setting of one key to a file',
  knobs: shellLedgerKnobs,
  variants: shellLedgerVariants,
  trainSeeds: { start: 0, end: 1_000_000 },
  evalSeeds: { start: 1_000_000, end: 1_010_000 },
  create: (knobs) => new ShellLedgerEnv(knobs),
  expert: shellLedgerExpert,
  tools: SHELL_TOOLS,
  summaryWriters: makeSummaryWriters(shellLedgerNeeded),
  sft: {
    dense: (o) => shellLedgerDense(o),
    valueWords: true,
  },
  summaryFacts: summaryFactsOf(shellLedgerNeeded),
  tokenizer: 'qwen3',
  // family.ts: each episode holds a bubblewrap shell; an SFT epoch's 512 would all start at once.
  maxConcurrentEpisodes: 64,
  // Sized in Qwen3 tokens (docs/tasks.md): about three parts fit a window, a summary needs < 20.
  rollout: SHELL_LEDGER_ROLLOUT,
  writeTaskFolder: ({ seed, knobs, dir }) =>
    writeTaskFolder(dir, generateShellLedger(seed, shellLedgerKnobs.parse(knobs)), `shell-ledger-${seed}`),
};

export { ShellLedgerEnv } from './env.ts';
export { generateShellLedger, partText } from './generate.ts';
export type { ShellLedgerTask } from './generate.ts';
export { shellLedgerKnobs, shellLedgerVariants } from './knobs.ts';
export type { ShellLedgerKnobs } from './knobs.ts';
export { writeTaskFolder as writeShellLedgerFolder } from './task-folder.ts';
