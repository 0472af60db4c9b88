import type { TextPolicy } from '../../contracts/index.ts';
import type { SummaryContent } from '../summary-content.ts';
import { readWindow, type VisibleWindow } from '../visible-window.ts';
import { modulePath, PACKAGE } from './generate.ts';
import { editCommand, functionReadCommand, grepCommand, INSTRUCTION, TEST_COMMAND } from './task-folder.ts';

const INSTRUCTION_START = INSTRUCTION.split(' ')[0];

/**
 * What the expert knows from the visible window alone (docs/tasks.md, repo-repair): the failing
 * test (from the test run's FAILED line or the summary's `goal`), what its function should return
 * (the test's comment as the failure shows it, or `spec`), the line of the function's `def` (from
 * `grep -n 'def FN'`), the line of its return (from the read that showed it), and whether the line
 * was edited and the tests then passed. Summary clauses use the words the observations use, so
 * one scan reads both.
 */
export interface RepoRepairState {
  /** pytest node id of the failing test, e.g. tests/test_fees.py::test_scale_fee. */
  goal: string | null;
  spec: string | null;
  /** The line of the function's `def`, from `grep -n 'def FN'` or a read that showed it. */
  def: number | null;
  /** The line of its return, from a read that showed it: the line to edit. */
  line: number | null;
  edited: boolean;
  passed: boolean;
  /** The window starts from a summary, not from the instruction. */
  resumed: boolean;
}

const GOAL = /^tests\/test_([a-z]+)\.py::test_([a-z_]+)$/;
/** The module and function a failing test names. */
export function goalParts(goal: string): { module: string; fn: string } | null {
  const m = GOAL.exec(goal);
  return m ? { module: m[1]!, fn: m[2]! } : null;
}
const num = (w: string | undefined): number | null => (w !== undefined && /^\d+$/.test(w) ? Number(w) : null);
const TEST_WORDS = TEST_COMMAND.split(' ');
const isTestRun = (a: readonly string[]) => a.length === TEST_WORDS.length && a.every((w, i) => w === TEST_WORDS[i]);

/** Words from `from` up to (not including) the first `stop` word. */
function clause(ws: readonly string[], from: number, stop: (w: string) => boolean): string[] {
  const out: string[] = [];
  for (let i = from; i < ws.length && !stop(ws[i]!); i++) out.push(ws[i]!);
  return out;
}

/** A test run's output: the first FAILED test, the comment of the failing test, or a clean pass. */
function readTestRun(s: RepoRepairState, o: readonly string[]): void {
  const failed = o.findIndex((w, i) => w === 'FAILED' && GOAL.test(o[i + 1] ?? ''));
  if (failed < 0) {
    if (o.includes('passed') && !o.includes('failed') && !o.some((w) => w.startsWith('error'))) s.passed = true;
    return;
  }
  const goal = o[failed + 1]!;
  if (goal !== s.goal) Object.assign(s, { goal, spec: null, def: null, line: null });
  s.edited = false;
  s.passed = false;
  const fn = goalParts(goal)!.fn;
  // `# fn(a, b) should return EXPR` then pytest's `>` marker and the failing `assert`.
  for (let i = 0; i < o.length; i++) {
    if (o[i] !== '#' || !o[i + 1]?.startsWith(`${fn}(`)) continue;
    const ret = o.indexOf('return', i);
    const expr = clause(o, ret + 1, (w) => w === 'assert');
    if (expr[expr.length - 1] === '>') expr.pop();
    if (ret > 0 && expr.length > 0) s.spec = expr.join(' ');
    break;
  }
}

export function readRepoRepair(w: VisibleWindow): RepoRepairState {
  const h = w.head;
  const s: RepoRepairState = {
    ...{ goal: null, spec: null, def: null, line: null, edited: false, passed: false },
    resumed: h[0] !== INSTRUCTION_START,
  };
  for (let i = 0; i < h.length; i++) {
    if (h[i] === 'goal' && GOAL.test(h[i + 1] ?? '')) s.goal = h[i + 1]!;
    if (h[i] === 'spec') s.spec = clause(h, i + 1, (x) => x === ',').join(' ') || null;
    if (h[i] === 'def' && num(h[i + 1]) !== null) s.def = num(h[i + 1])!;
    if (h[i] === 'line' && num(h[i + 1]) !== null) s.line = num(h[i + 1])!;
    if (h[i] === 'edited') s.edited = true;
    if (h[i] === 'passed') s.passed = true;
  }
  for (const st of w.steps) {
    const a = st.action;
    const o = st.observation;
    if (isTestRun(a)) {
      if (o) readTestRun(s, o);
      continue;
    }
    // An edit of the package is remembered even when the goal is not: the file stays edited.
    if (a[0] === 'sed' && a[1] === '-i' && a.some((x) => x.startsWith(`${PACKAGE}/`))) s.edited = true;
    const at = s.goal ? goalParts(s.goal) : null;
    if (!at || !a.includes(modulePath(at.module)) || !o) continue;
    if (a[0] === 'grep') {
      // `12:def scale_fee(a, b):` (a name that prefixes another's lists both).
      const hit = o.findIndex((x, i) => /^\d+:def$/.test(x) && o[i + 1]?.startsWith(`${at.fn}(`));
      if (hit >= 0) s.def = Number(o[hit]!.split(':')[0]);
      continue;
    }
    if (a[0] !== 'cat') continue;
    // `cat -n` prints `12 def scale_fee(a, b):` then `13 return ...`: the return's number is the line.
    const def = o.findIndex((x, i) => x === 'def' && o[i + 1]?.startsWith(`${at.fn}(`));
    if (def < 1 || num(o[def - 1]) === null) continue;
    s.def = num(o[def - 1])!;
    const ret = o.indexOf('return', def);
    if (ret > 0 && num(o[ret - 1]) === s.def + 1) s.line = s.def + 1;
  }
  return s;
}

/**
 * Run the tests; grep the failing test's function's def; read the function (its def and return
 * lines, from the def's number); fix the return line by its number; submit
 * (the verifier runs the tests). Resumed from a summary that lost the goal or what the function
 * should return, it submits as it stands, as shell-ledger's expert answers `none`: running the
 * tests again would recover them at the cost of most of a window, which a trained policy may learn.
 */
export function repoRepairAct(s: RepoRepairState): string {
  if (s.passed || s.edited) return 'submit';
  const at = s.goal ? goalParts(s.goal) : null;
  if (!at || s.spec === null) return s.resumed ? 'submit' : TEST_COMMAND;
  if (s.line !== null) return editCommand(at.module, s.line, `    return ${s.spec}`);
  if (s.def !== null) return functionReadCommand(at.module, s.def);
  return grepCommand(at.module, at.fn);
}

/** The oracle's clauses: the goal, then only what the next actions still need. */
export function repoRepairNeeded(w: VisibleWindow): SummaryContent {
  const s = readRepoRepair(w);
  const goal = s.goal !== null ? [`goal ${s.goal}`] : [];
  if (s.passed) return { goal, facts: ['passed'], meta: [] };
  if (s.edited) return { goal, facts: ['edited'], meta: [] };
  const facts = s.spec !== null ? [`spec ${s.spec}`] : [];
  if (s.line !== null) facts.push(`line ${s.line}`);
  else if (s.def !== null) facts.push(`def ${s.def}`);
  return { goal, facts, meta: [] };
}

/** Expert policy; asked for a summary (q_sum), it writes the oracle summary. */
export const repoRepairExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = repoRepairNeeded(w);
    return [...c.goal, ...c.facts].join(' , ');
  }
  return repoRepairAct(readRepoRepair(w));
};
