import { mixSeed, Rng } from '../../util/random.ts';
import { BODIES_FOR, evalBody, plantBug, renderBody, type Body, type BugKind } from './body.ts';
import type { RepoRepairKnobs } from './knobs.ts';

/**
 * A repo-repair task: a small Python package `calc` (a helper module base.py and `modules`
 * modules of one-line functions) with a pytest suite (tests/test_<module>.py, one test per
 * function, each test's comment saying what the function should return, as an issue would) and
 * one planted bug: a wrong constant, operator, comparison or argument order in one function. Its
 * test is FAIL_TO_PASS; every other test is PASS_TO_PASS (SWE-bench's grading).
 *
 * Module layout (line numbers matter: the agent edits by line):
 *   1  from .base import diff
 *   2
 *   3  def f0(a, b):          function i: def on 3 + 3i, return on 4 + 3i
 *   4      return <body>
 *   5
 */
export const PACKAGE = 'calc';

export interface RepoFunction {
  name: string;
  body: Body; // the correct body
  /** The test's calls: (a, b) pairs; under the bug, the first call returns something else. */
  calls: [number, number][];
}

export interface RepoModule {
  name: string;
  functions: RepoFunction[];
}

export interface RepoRepairTask {
  modules: RepoModule[];
  bug: { module: string; fn: string; kind: BugKind; buggy: Body; line: number };
  /** pytest node ids, relative to the repository root. */
  failToPass: string[];
  passToPass: string[];
}

const FAMILY_SALT = 0x5e9a17;
/** Module names (plural) and the noun their functions are named by. */
const MODULES: readonly [string, string][] = [
  ['fees', 'fee'],
  ['rates', 'rate'],
  ['units', 'unit'],
  ['scores', 'score'],
  ['points', 'point'],
  ['loans', 'loan'],
  ['tiles', 'tile'],
  ['votes', 'vote'],
  ['miles', 'mile'],
  ['bonds', 'bond'],
];
const VERBS = [
  'scale',
  'shift',
  'blend',
  'pick',
  'trim',
  'boost',
  'merge',
  'level',
  'weigh',
  'clamp',
  'carry',
  'stack',
];

export const functionLine = (index: number): number => 3 + 3 * index;
export const testId = (module: string, fn: string): string => `tests/test_${module}.py::test_${fn}`;
export const modulePath = (module: string): string => `${PACKAGE}/${module}.py`;
export const BASE_TEST = testId('base', 'diff');

function randomBody(kind: Body['kind'], rng: Rng): Body {
  if (kind === 'linear')
    return { kind, op1: rng.pick(['*', '+'] as const), k: 2 + rng.int(8), op2: rng.pick(['+', '-'] as const) };
  if (kind === 'cond') return { kind, cmp: rng.pick(['>', '<', '>=', '<='] as const), k: 2 + rng.int(8) };
  const fn = rng.pick(['diff', 'pow'] as const);
  return { kind, fn, swapped: false, k: fn === 'pow' ? 2 + rng.int(2) : 2 + rng.int(8) };
}

/** Two calls with a != b (pow keeps a small); `differ` asks the first call to tell the bodies apart. */
function testCalls(body: Body, rng: Rng, buggy: Body | null): [number, number][] {
  const draw = (): [number, number] => {
    const a = 1 + rng.int(body.kind === 'call' && body.fn === 'pow' ? 4 : 9);
    let b = 1 + rng.int(9);
    if (b === a) b = (b % 9) + 1;
    return [a, b];
  };
  for (let tries = 0; tries < 500; tries++) {
    const first = draw();
    if (buggy && evalBody(buggy, ...first) === evalBody(body, ...first)) continue;
    return [first, draw()];
  }
  throw new Error(`internal: no call tells ${renderBody(body)} from its bug`);
}

/** Seeded generator: the same (seed, knobs) always gives the same task. */
export function generateRepoRepair(seed: number, k: RepoRepairKnobs): RepoRepairTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const names = rng.shuffle([...MODULES]).slice(0, k.modules);
  const kind = rng.pick(k.bugKinds);
  const bugModule = rng.int(names.length);
  const modules: RepoModule[] = [];
  let bug: RepoRepairTask['bug'] | null = null;
  for (const [m, [name, noun]] of names.entries()) {
    const n = k.minFunctions + rng.int(k.maxFunctions - k.minFunctions + 1);
    const verbs = rng.shuffle([...VERBS]).slice(0, n);
    const at = m === bugModule ? rng.int(n) : -1;
    const functions = verbs.map((verb, i): RepoFunction => {
      const fn = `${verb}_${noun}`;
      const kinds: readonly Body['kind'][] = i === at ? BODIES_FOR[kind] : ['linear', 'cond', 'call'];
      const body = randomBody(rng.pick(kinds), rng);
      let buggy: Body | null = null;
      if (i === at) {
        buggy = plantBug(body, kind, (x) => rng.int(x));
        bug = { module: name, fn, kind, buggy, line: functionLine(i) + 1 };
      }
      return { name: fn, body, calls: testCalls(body, rng, buggy) };
    });
    modules.push({ name, functions });
  }
  const b = bug!;
  const failToPass = [testId(b.module, b.fn)];
  const all = [BASE_TEST, ...modules.flatMap((m) => m.functions.map((f) => testId(m.name, f.name)))];
  return { modules, bug: b, failToPass, passToPass: all.filter((id) => !failToPass.includes(id)) };
}
