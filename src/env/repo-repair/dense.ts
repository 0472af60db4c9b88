import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { renderBody } from './body.ts';
import { generateRepoRepair, modulePath } from './generate.ts';
import type { RepoRepairKnobs } from './knobs.ts';
import { correctBody, repoFiles } from './repo-files.ts';
import { editCommand, READ_LINES, readCommand } from './task-folder.ts';

/**
 * The runtime's u_resume prefix (DEFAULT_CHAT_TEMPLATES of rollout/chat-layout.ts, which env/ may not
 * import; dense.test.ts holds the two equal): a resumed window's first user turn.
 */
export const RESUME_PREFIX = 'continue from the summary :';

/**
 * Dense warm-up text for repo-repair (docs/sft.md, "Family dense forms"): the windows of an
 * episode where the fix is written, many per step, without running anything. The base of the
 * recall stage alone ran the tests and read the right lines, then could not copy the expected
 * expression into its edit: an episode has one such copy, a dense step sixteen. Two forms, both
 * in the runtime's layout and the sandbox's text (`cat -n` output, `[exit 0]`):
 *   edit form     a window resumed from the oracle's summary (`goal G , spec E , read R` or
 *                 `line L`), the last reads kept from before, then the expert's own turns,
 *                 supervised: the reads on from R until the function's `def` shows, the
 *                 `sed -i 'Ls/.*\/    return E/'` that copies E and the line after the def, submit;
 *   summary form  the same window cut where a compaction falls, closed by the oracle's summary.
 * The test run's output is not generated (its text is pytest's); episodes teach reading it.
 */
export function repoRepairDense(options: {
  rng: Rng;
  knobs: RepoRepairKnobs;
  maxChunks: number;
  probes: number;
  summaryShare: number;
}): DensePart[] {
  const { rng, knobs } = options;
  const task = generateRepoRepair(rng.int(1_000_000), knobs);
  const { module, line } = task.bug;
  const text = repoFiles(task, { buggy: true })[modulePath(module)]!.split('\n');
  if (text[text.length - 1] === '') text.pop(); // the file's last newline ends a line, it is not one
  const spec = renderBody(correctBody(task));
  const goal = `goal ${task.failToPass[0]!} , spec ${spec}`;
  // Lines read before this window: whole reads that end before the def (the def is on line - 1).
  const readsBefore = rng.int(Math.floor((line - 2) / READ_LINES) + 1);
  const read = readsBefore * READ_LINES;
  const lineKnown = read === 0 ? false : rng.next() < 0.2; // the summary of a window that saw the def
  const head = lineKnown ? `${goal} , line ${line}` : read > 0 ? `${goal} , read ${read}` : goal;
  const parts: DensePart[] = [{ kind: 'instruction', text: `${RESUME_PREFIX} ${head}` }];
  if (!lineKnown) {
    // The tail the runtime keeps (up to two steps): the reads that ended at `read`.
    for (let r = Math.max(0, readsBefore - 2); r < readsBefore; r++) {
      parts.push({ kind: 'action', text: readCommand(module, r * READ_LINES + 1) });
      parts.push({ kind: 'observation', text: catN(text, r * READ_LINES + 1) });
    }
  }
  const steps: { action: string; observation: string }[] = [];
  if (!lineKnown)
    for (let first = read + 1; first <= line - 1; first += READ_LINES)
      steps.push({ action: readCommand(module, first), observation: catN(text, first) });
  const fix = editCommand(module, line, `    return ${spec}`);
  if (rng.next() < options.summaryShare && steps.length > 0) {
    // Cut after some of the new reads: the summary keeps the goal, the spec and how far it got.
    const cut = 1 + rng.int(steps.length);
    for (const s of steps.slice(0, cut)) parts.push({ kind: 'reply', text: s.action }, observationPart(s));
    const readTo = read + cut * READ_LINES;
    const sawDef = readTo >= line - 1;
    parts.push({ kind: 'summary', text: sawDef ? `${goal} , line ${line}` : `${goal} , read ${readTo}` });
    return parts;
  }
  for (const s of steps) parts.push({ kind: 'reply', text: s.action }, observationPart(s));
  parts.push(
    { kind: 'reply', text: fix },
    { kind: 'observation', text: '[exit 0]' },
    { kind: 'reply', text: 'submit' },
  );
  return parts;
}

const observationPart = (s: { observation: string }): DensePart => ({ kind: 'observation', text: s.observation });

/** What `cat -n FILE | sed -n F,Lp` prints for READ_LINES lines from `first`, as the sandbox returns it. */
export function catN(lines: readonly string[], first: number): string {
  let out = '';
  for (let n = first; n < first + READ_LINES && n <= lines.length; n++)
    out += `${String(n).padStart(6)}\t${lines[n - 1]!}\n`;
  return `${out}[exit 0]`;
}
