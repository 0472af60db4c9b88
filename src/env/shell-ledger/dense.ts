import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { END_OF_LOG, generateShellLedger, partPath, partText, type ShellLedgerTask } from './generate.ts';
import { instructionText } from './task-folder.ts';
import type { ShellLedgerKnobs } from './knobs.ts';

/**
 * Dense warm-up text for shell-ledger (docs/sft.md: the recipe kv-ledger's base needed), in the
 * family's own chat layout and shell text. Two forms after the family-independent recall stage:
 *   lookup form   the parts of a real log as one stream (each `cat` output with its `[exit 0]`),
 *                 then many supervised lookups: summary probes (`goal port , read R` → the
 *                 oracle's `goal port , read R , port = tiger`) and answer probes (`final setting
 *                 of port :` → `port tiger`, the answer file's line);
 *   episode form  an expert window (instruction, then `cat log/part-K.txt` turns with their
 *                 output) closed by one summary request, answered by the oracle summary: the
 *                 long-range lookup of the first compaction.
 * Observations are written exactly as the sandbox returns them (harbor-env.ts `describe`).
 */
export function shellLedgerDense(options: {
  rng: Rng;
  knobs: ShellLedgerKnobs;
  maxChunks: number;
  probes: number;
  summaryShare: number;
}): DensePart[] {
  const { rng, knobs } = options;
  const max = Math.max(1, Math.min(options.maxChunks, knobs.maxParts));
  if (rng.next() < options.summaryShare) return episodeForm({ rng, knobs, max });
  const n = 1 + rng.int(max);
  const task = generateShellLedger(rng.int(1_000_000), { ...knobs, minParts: n, maxParts: n });
  const parts: DensePart[] = [{ kind: 'context', text: task.parts.map((_, i) => observation(task, i)).join('\n') }];
  const keys = [...new Set(task.parts.flat().flatMap((l) => (l.kind === 'comment' ? [] : [l.key])))];
  for (let p = 0; p < options.probes && keys.length > 0; p++) {
    const key = rng.pick(keys);
    const value = valueAfter(task, key, n);
    if (rng.next() < 0.5) {
      const goal = `goal ${key} , read ${n}`;
      parts.push({ kind: 'context', text: goal }, { kind: 'summary', text: `${goal} , ${key} = ${value}` });
    } else {
      parts.push({ kind: 'context', text: `final setting of ${key} :` }, { kind: 'target', text: `${key} ${value}` });
    }
  }
  return parts;
}

/** What `cat` of part i (0-based) shows, as the runtime sees it. */
export function observation(task: ShellLedgerTask, i: number): string {
  return `${partText(task, i)}[exit 0]`;
}

/** The setting's value after the first `n` parts ('none' if unset or never set). */
export function valueAfter(task: ShellLedgerTask, key: string, n: number): string {
  let v = 'none';
  for (const line of task.parts.slice(0, n).flat()) {
    if (line.kind === 'set' && line.key === key) v = line.value;
    if (line.kind === 'unset' && line.key === key) v = 'none';
  }
  return v;
}

function episodeForm(options: { rng: Rng; knobs: ShellLedgerKnobs; max: number }): DensePart[] {
  const { rng, knobs, max } = options;
  const task = generateShellLedger(rng.int(1_000_000), knobs);
  // The window of a first compaction: a few parts read, usually not all of them.
  const read = Math.min(task.parts.length, 1 + rng.int(Math.max(1, Math.min(max, task.parts.length))));
  const parts: DensePart[] = [{ kind: 'instruction', text: instructionText(task) }];
  for (let i = 1; i <= read; i++) {
    parts.push({ kind: 'action', text: `cat ${partPath(i)}` }, { kind: 'observation', text: observation(task, i - 1) });
  }
  const clauses = [`goal ${task.key}`, `read ${read}`];
  const value = valueAfter(task, task.key, read);
  // The oracle keeps the value once the setting was seen set or unset (shellLedgerNeeded).
  const seen = task.parts
    .slice(0, read)
    .flat()
    .some((l) => l.kind !== 'comment' && l.key === task.key);
  if (seen) clauses.push(`${task.key} = ${value}`);
  if (read === task.parts.length) clauses.push(END_OF_LOG);
  parts.push({ kind: 'summary', text: clauses.join(' , ') });
  return parts;
}
