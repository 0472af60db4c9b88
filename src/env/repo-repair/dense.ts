import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { renderBody } from './body.ts';
import { generateRepoRepair, modulePath } from './generate.ts';
import type { RepoRepairKnobs } from './knobs.ts';
import { correctBody, repoFiles } from './repo-files.ts';
import { editCommand, functionReadCommand, grepCommand } from './task-folder.ts';

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
 * in the runtime's layout and the sandbox's text (`grep -n` and `cat -n` output, `[exit 0]`):
 *   edit form     a window resumed from the oracle's summary (`goal G , spec E`, with `def D` or
 *                 `line L` or neither), then the expert's own turns, supervised: the `grep -n 'def FN'`
 *                 of the failing test's function, its read from the def's number, the
 *                 `sed -i 'Ls/.*\/    return E/'` that copies E to the return's line, submit;
 *   summary form  the same window cut after the grep or the read, closed by the oracle's
 *                 summary (the number that step showed).
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
  const def = line - 1;
  // Where the summary this window resumes from had got to: nothing located, the def, the line.
  const from = rng.pick(['goal', 'goal', 'def', 'line'] as const);
  const head = from === 'goal' ? goal : from === 'def' ? `${goal} , def ${def}` : `${goal} , line ${line}`;
  const parts: DensePart[] = [{ kind: 'instruction', text: `${RESUME_PREFIX} ${head}` }];
  const steps: { action: string; observation: string; summary: string }[] = [];
  if (from === 'goal')
    steps.push({
      action: grepCommand(module, task.bug.fn),
      observation: grepDefs(text, task.bug.fn),
      summary: `${goal} , def ${def}`,
    });
  if (from !== 'line')
    steps.push({
      action: functionReadCommand(module, def),
      observation: catN(text, def, 2),
      summary: `${goal} , line ${line}`,
    });
  const cut = steps.length > 0 && rng.next() < options.summaryShare ? 1 + rng.int(steps.length) : 0;
  for (const s of cut > 0 ? steps.slice(0, cut) : steps)
    parts.push({ kind: 'reply', text: s.action }, { kind: 'observation', text: s.observation });
  if (cut > 0) {
    parts.push({ kind: 'summary', text: steps[cut - 1]!.summary });
    return parts;
  }
  parts.push(
    { kind: 'reply', text: editCommand(module, line, `    return ${spec}`) },
    { kind: 'observation', text: '[exit 0]' },
    { kind: 'reply', text: 'submit' },
  );
  return parts;
}

/** What `cat -n FILE | sed -n F,+{count-1}p` prints for `count` lines from `first`, as the sandbox returns it. */
export function catN(lines: readonly string[], first: number, count: number): string {
  let out = '';
  for (let n = first; n < first + count && n <= lines.length; n++)
    out += `${String(n).padStart(6)}\t${lines[n - 1]!}\n`;
  return `${out}[exit 0]`;
}

/** What `grep -n 'def FN' FILE` prints, as the sandbox returns it. */
export function grepDefs(lines: readonly string[], fn: string): string {
  let out = '';
  for (const [i, l] of lines.entries()) if (l.includes(`def ${fn}`)) out += `${i + 1}:${l}\n`;
  return `${out}[exit 0]`;
}
