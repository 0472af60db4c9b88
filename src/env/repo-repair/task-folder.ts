import { writeFolderFiles } from '../harbor/write-folder.ts';
import { stringify as toToml } from 'smol-toml';
import { modulePath, PACKAGE, type RepoRepairTask } from './generate.ts';
import { GRADER_FILES } from './grade-script.ts';
import { fixedLine, repoFiles, testFiles } from './repo-files.ts';

/** The test command the instruction names and the expert runs. */
export const TEST_COMMAND = 'python3 -m pytest -q';
/** Finds a function's def line by its name (`12:def scale_fee(a, b):`). */
export const grepCommand = (module: string, fn: string): string => `grep -n 'def ${fn}' ${modulePath(module)}`;
/** Prints a function's def line and the line after it (its return), numbered: GNU sed's `N,+1`. */
export const functionReadCommand = (module: string, def: number | 'DEF'): string =>
  `cat -n ${modulePath(module)} | sed -n ${def},+1p`;
export const editCommand = (module: string, line: number, text: string): string =>
  `sed -i '${line}s/.*/${text}/' ${modulePath(module)}`;

/**
 * The instruction says how to act (no action hint: every token counts in this family). The
 * failing test's comment stands in for an issue's statement of the expected behaviour.
 */
export const INSTRUCTION =
  `Fix the bug in the Python package ${PACKAGE} in /app . Test with ${TEST_COMMAND} ( a failing test's comment says ` +
  `what its function should return ) , find its function with ${grepCommand('MODULE', 'FUNCTION')} , read it with ${functionReadCommand('MODULE', 'DEF')} , ` +
  `edit with sed -i 'LINEs/.*/    return EXPRESSION/' ${modulePath('MODULE')} , then submit .`;

/**
 * A repo-repair task as a Harbor task folder (docs/harbor.md): environment/ is the repository
 * (copied to /app) with the bug planted; task.toml lists the graded pytest node ids under
 * [metadata] (fail_to_pass, pass_to_pass; verdict = "signed" asks the framework for a signed
 * reward); tests/ holds the verifier (grade-script.ts), the lists again and a pristine copy of the
 * repository's tests; solution/solve.sh rewrites the wrong line.
 */
export function taskFolderFiles(task: RepoRepairTask, name: string): Record<string, string> {
  const files: Record<string, string> = {
    'instruction.md': INSTRUCTION + '\n',
    'task.toml': toToml({
      version: '1.0',
      task: { name },
      metadata: {
        family: 'repo-repair',
        action_hint: false,
        bug_kind: task.bug.kind,
        fail_to_pass: task.failToPass,
        pass_to_pass: task.passToPass,
        // The framework issues a key per episode (tests/.verdict-key) and requires reward.sig (grade-script.ts).
        verdict: 'signed',
      },
      agent: { timeout_sec: 600 },
      verifier: { timeout_sec: 120 },
      // Harbor's default build limit: a container image is built on a machine that may be busy.
      environment: { build_timeout_sec: 600, cpus: 1, memory_mb: 1024, allow_internet: false },
    }),
    'tests/test.sh': [
      '#!/bin/bash',
      '# SWE-bench-style grading: FAIL_TO_PASS and PASS_TO_PASS must all pass against the pristine tests (grade.py).',
      '# exec: bash reads a script as it runs it, so a line added to this file meanwhile would run after the grader.',
      'exec python3 -I /tests/grade.py',
      '',
    ].join('\n'),
    'tests/config.json':
      JSON.stringify({ fail_to_pass: task.failToPass, pass_to_pass: task.passToPass }, null, 2) + '\n',
    'solution/solve.sh': [
      '#!/bin/bash',
      '# Put the wrong line back as the failing test describes it (the expressions hold no quote, slash or &).',
      'cd /app',
      editCommand(task.bug.module, task.bug.line, fixedLine(task)),
      '',
    ].join('\n'),
  };
  for (const [name, text] of Object.entries(GRADER_FILES)) files[`tests/${name}`] = text;
  for (const [rel, text] of Object.entries(repoFiles(task, { buggy: true }))) files[`environment/${rel}`] = text;
  for (const [rel, text] of Object.entries(testFiles(task))) files[`tests/repo-${rel}`] = text;
  return files;
}

/** Writes the folder (scripts executable). */
export function writeTaskFolder(dir: string, task: RepoRepairTask, name: string): string {
  return writeFolderFiles(dir, taskFolderFiles(task, name));
}
