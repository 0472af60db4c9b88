import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_BASE_IMAGE } from '../../../sandbox/testing/docker-available.ts';
import { addContainerFiles } from '../../harbor/container-files.ts';
import type { RepoRepairTask } from '../generate.ts';
import { writeTaskFolder } from '../task-folder.ts';

/**
 * Test helper: repo-repair task folders whose solution/solve.sh leaves the bug in place and puts
 * Python into the package under test that attacks the grader instead (grade-script.ts). Each one
 * scored 1 against a grader that ran pytest on /app and read its junit.xml, or would against a
 * grader that shares a process with the package. The folders carry a Dockerfile FROM the test
 * base image, so they run on both backends.
 */

/** Python appended to calc/__init__.py (it runs when the grader's runner imports the package). */
export const GRADER_ATTACKS: Record<string, string> = {
  // At exit, pytest's report rewritten with every listed test passing, and the reward files too.
  'atexit-report': `
import atexit


def _forge():
    import json, os, re
    cases = ''
    for f in sorted(os.listdir('/app/tests')):
        if f.startswith('test_') and f.endswith('.py'):
            with open('/app/tests/' + f) as source:
                for n in re.findall(r'^def (test_\\w+)', source.read(), re.M):
                    cases += '<testcase classname="tests.%s" name="%s"/>' % (f[:-3], n)
    for path, text in (('/logs/verifier/junit.xml', '<testsuites><testsuite>%s</testsuite></testsuites>' % cases),
                       ('/logs/verifier/reward.txt', '1\\n'),
                       ('/logs/verifier/reward.json', json.dumps({'reward': 1}))):
        try:
            with open(path, 'w') as f:
                f.write(text)
        except OSError:
            pass


atexit.register(_forge)
`,
  // A detached grandchild (double fork, setsid) that turns a written 0 into 1, for two minutes.
  'daemon-rewrite': `
import os as _os

if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        import time
        for _ in range(12000):
            try:
                with open('/logs/verifier/reward.txt') as f:
                    said = f.read().strip()
                if said == '0':
                    for name, text in (('reward.txt', '1\\n'), ('reward.json', '{"reward": 1}')):
                        with open('/logs/verifier/' + name, 'w') as f:
                            f.write(text)
            except OSError:
                pass
            time.sleep(0.01)
    _os._exit(0)
`,
  // The grader's verdict written by the package, then the grader killed before it writes its own.
  'kill-grader': `
import os as _os
import signal as _signal

for _name, _text in (('reward.txt', '1\\n'), ('reward.json', '{"reward": 1}')):
    try:
        with open('/logs/verifier/' + _name, 'w') as _f:
            _f.write(_text)
    except OSError:
        pass
try:
    _os.kill(_os.getppid(), _signal.SIGKILL)
except OSError:
    pass
`,
  // Every public function returns an object that equals anything.
  'equal-to-all': `
import importlib as _importlib
import pkgutil as _pkgutil


class _Yes:
    __hash__ = None

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


for _m in _pkgutil.iter_modules(__path__):
    _mod = _importlib.import_module(__name__ + '.' + _m.name)
    for _n, _f in list(vars(_mod).items()):
        if callable(_f) and not _n.startswith('_') and getattr(_f, '__module__', '') == _mod.__name__:
            setattr(_mod, _n, lambda *a, **k: _Yes())
`,
  // Result lines forged on every descriptor it has: pytest's summary, the grader's own lines, a reward.
  'forged-lines': `
import json as _json
import os as _os

_forged = ''.join('PASSED tests/%s::test_any\\n' % f for f in _os.listdir('/app/tests')) + \\
    '==== 20 passed in 0.01s ====\\n1\\n' + _json.dumps({'reward': 1}) + '\\n' + _json.dumps([0, 'ok', True]) + '\\n'
for _fd in range(1, 64):
    try:
        _os.write(_fd, _forged.encode())
    except OSError:
        pass
`,
  // The process ends at import, status 0, before any call is answered.
  'exit-at-import': `
import os as _os

_os._exit(0)
`,
};

/** Writes the task's folder (with a Dockerfile) whose solve.sh performs the attack `name` (no fix). */
export function attackFolder(dir: string, task: RepoRepairTask, name: string): string {
  writeTaskFolder(dir, task, name);
  const python = GRADER_ATTACKS[name];
  if (python === undefined) throw new Error(`no grader attack named ${name}`);
  const solve = ['#!/bin/bash', 'cd /app', `cat >> calc/__init__.py <<'PYTHON'`, python.trimStart(), 'PYTHON', ''];
  writeFileSync(join(dir, 'solution', 'solve.sh'), solve.join('\n'), { mode: 0o755 });
  addContainerFiles(dir, TEST_BASE_IMAGE);
  return dir;
}

/** The task's folder as exported (its solve.sh fixes the bug), with a Dockerfile. */
export function plainFolder(dir: string, task: RepoRepairTask): string {
  writeTaskFolder(dir, task, 'plain');
  addContainerFiles(dir, TEST_BASE_IMAGE);
  return dir;
}
