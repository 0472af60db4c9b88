import { evalBody, renderBody, type Body } from './body.ts';
import { functionLine, modulePath, PACKAGE, type RepoModule, type RepoRepairTask } from './generate.ts';

/**
 * The repository of a task as files (path relative to the repository root -> text): the package
 * with the bug planted (`buggy`) or fixed, and its tests. The tests are the same either way: the
 * verifier keeps its own copy of them (task-folder.ts).
 */
export function repoFiles(task: RepoRepairTask, options: { buggy: boolean }): Record<string, string> {
  const files: Record<string, string> = {
    [`${PACKAGE}/__init__.py`]: '',
    [modulePath('base')]: 'def diff(x, y):\n    return x - y\n',
    ...testFiles(task),
  };
  for (const m of task.modules) files[modulePath(m.name)] = moduleText(task, m, options.buggy);
  return files;
}

/** tests/: one file per module, one test per function (its comment says what it should return). */
export function testFiles(task: RepoRepairTask): Record<string, string> {
  const files: Record<string, string> = {
    'tests/__init__.py': '',
    'tests/test_base.py': [
      `from ${PACKAGE}.base import diff`,
      '',
      '',
      'def test_diff():',
      '    assert diff(7, 3) == 4',
      '    assert diff(2, 5) == -3',
      '',
    ].join('\n'),
  };
  for (const m of task.modules) {
    const lines = [`from ${PACKAGE}.${m.name} import ${m.functions.map((f) => f.name).join(', ')}`, ''];
    for (const f of m.functions) {
      lines.push('', `def test_${f.name}():`, `    # ${f.name}(a, b) should return ${renderBody(f.body)}`);
      for (const [a, b] of f.calls) lines.push(`    assert ${f.name}(${a}, ${b}) == ${evalBody(f.body, a, b)}`);
    }
    files[`tests/test_${m.name}.py`] = lines.join('\n') + '\n';
  }
  return files;
}

function moduleText(task: RepoRepairTask, m: RepoModule, buggy: boolean): string {
  const lines = ['from .base import diff', ''];
  m.functions.forEach((f, i) => {
    const wrong = buggy && task.bug.module === m.name && task.bug.fn === f.name;
    if (lines.length + 1 !== functionLine(i)) throw new Error('internal: module layout drifted');
    lines.push(`def ${f.name}(a, b):`, `    return ${renderBody(wrong ? task.bug.buggy : f.body)}`, '');
  });
  return lines.join('\n');
}

/** The buggy function's body as it should be (what its test's comment states). */
export function correctBody(task: RepoRepairTask): Body {
  return task.modules.find((m) => m.name === task.bug.module)!.functions.find((x) => x.name === task.bug.fn)!.body;
}

/** The line that fixes the bug, as it must read. */
export function fixedLine(task: RepoRepairTask): string {
  return `    return ${renderBody(correctBody(task))}`;
}
