import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateRepoRepair } from './generate.ts';
import { GRADER_FILES } from './grade-script.ts';
import { repoRepair, repoRepairKnobs } from './index.ts';
import { testFiles } from './repo-files.ts';
import { pytestAvailable } from './testing/pytest-available.ts';

/**
 * The grader's Python pieces on the host's python3 (the sandboxes run the same files): what it
 * reads from a test with ast, how it compares values, how strictly it decodes the runner's reply,
 * and the runner with the sweep on a package that returns what is not plain JSON and leaves a
 * daemon behind.
 */
const root = mkdtempSync(join(tmpdir(), 'crl-grade-spec-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const grader = join(root, 'grader');
mkdirSync(grader);
for (const [name, text] of Object.entries(GRADER_FILES)) writeFileSync(join(grader, name), text);

/** Runs `code` with the grader's modules importable; returns what it printed as JSON. */
function python(code: string): unknown {
  const r = spawnSync(
    'python3',
    ['-I', '-B', '-c', `import sys; sys.path.insert(0, ${JSON.stringify(grader)})\n${code}`],
    {
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe.skipIf(!pytestAvailable('the grader on the host python3'))("repo-repair's grader pieces", () => {
  it('reads every generated test as calls with literal arguments and expected values', () => {
    const task = generateRepoRepair(repoRepair.evalSeeds.start, repoRepairKnobs.parse({}));
    const files = testFiles(task);
    const module = task.modules[0]!;
    const f = module.functions[0]!;
    const source = files[`tests/test_${module.name}.py`]!;
    const checks = python(
      `import json, grade_spec\nprint(json.dumps(grade_spec.checks_in(${JSON.stringify(source)}, "test_${f.name}")))`,
    ) as { module: string; function: string; args: number[]; expected: number }[];
    expect(checks.map((c) => [c.module, c.function, c.args])).toEqual(
      f.calls.map((args) => [`calc.${module.name}`, f.name, args]),
    );
    expect(source).toContain(`assert ${f.name}(${f.calls[0]!.join(', ')}) == ${checks[0]!.expected}\n`);
  });

  it('any other shape in a listed test is a failed test with its reason, not a crash', () => {
    const head = 'from calc.fees import f\nimport os\n\n\ndef test_x():\n';
    const cases: Record<string, string> = {
      'x = 1': 'not `assert FN',
      'assert f(1, 2) == 3, "why"': 'not `assert FN',
      'assert f(1, 2) != 3': 'not `assert FN',
      'assert f(1, 2) == 3 == 3': 'not `assert FN',
      'assert os.getcwd() == 3': 'not imported',
      'assert g(1) == 3': 'not imported',
      'assert f(a=1) == 3': 'not imported',
      'assert f(*[1]) == 3': 'unpacks',
      'assert f(len("ab")) == 3': 'not a literal',
      'assert f(1) == (1, 2)': 'not a plain JSON value',
      'assert f(1) == float("nan")': 'not a literal',
    };
    const reasons = python(`import json, grade_spec
out = {}
for line in ${JSON.stringify(Object.keys(cases))}:
    try:
        grade_spec.checks_in(${JSON.stringify(head)} + "    " + line + "\\n", "test_x")
        out[line] = "graded"
    except grade_spec.Unsupported as e:
        out[line] = str(e)
for name, source in (("missing", "def test_y():\\n    pass\\n"), ("syntax", "def test_x(:\\n"),
                     ("decorated", "import p\\n@p.mark\\ndef test_x():\\n    assert 1 == 1\\n")):
    try:
        grade_spec.checks_in(source, "test_x")
        out[name] = "graded"
    except grade_spec.Unsupported as e:
        out[name] = str(e)
print(json.dumps(out))`) as Record<string, string>;
    for (const [line, why] of Object.entries(cases)) expect(reasons[line], line).toContain(why);
    expect(reasons.missing).toMatch(/no single module-level function test_x/);
    expect(reasons.syntax).toMatch(/does not parse/);
    expect(reasons.decorated).toMatch(/not a plain/);
  });

  it('compares as == does, except that a bool equals only a bool', () => {
    const pairs: [unknown, unknown, boolean][] = [
      [6, 6, true],
      [6, 6.0, true], // JSON keeps 6.0 a float; Python's 6 == 6.0
      [1, true, false],
      [0, false, false],
      [true, 1, false],
      [true, true, true],
      [6, '6', false],
      [null, 0, false],
      [null, null, true],
      [[1, 2], [1, 2], true],
      [[1, 2], [1, true], false],
      [{ a: 1 }, { a: 1 }, true],
      [{ a: 1 }, { a: 1, b: 2 }, false],
    ];
    const got = python(
      `import json, grade_spec\nprint(json.dumps([grade_spec.same(e, g) for e, g, _ in json.loads(${JSON.stringify(JSON.stringify(pairs))})]))`,
    );
    expect(got).toEqual(pairs.map((p) => p[2]));
  });

  it("decodes the runner's reply strictly: a malformed or repeated line voids it", () => {
    const replies: Record<string, string> = {
      good: '[0, "ok", 6]\n[1, "error", "raised ValueError"]\n',
      'partial last line': '[0, "ok", 6]\n[1, "ok"',
      'not json': 'PASSED tests/test_fees.py::test_f\n[0, "ok", 6]\n',
      'answered twice': '[0, "ok", 5]\n[0, "ok", 6]\n',
      NaN: '[0, "ok", NaN]\n',
      infinite: '[0, "ok", 1e999]\n',
      'index out of range': '[2, "ok", 6]\n',
      'bool index': '[true, "ok", 6]\n',
      'error without a reason': '[0, "error", 3]\n',
    };
    const decoded = python(`import json, grade_spec
print(json.dumps({k: grade_spec.decode_results(v.encode(), 2) for k, v in json.loads(${JSON.stringify(JSON.stringify(replies))}).items()}))`);
    expect(decoded).toEqual({
      good: [
        ['ok', 6],
        ['error', 'raised ValueError'],
      ],
      'partial last line': [['ok', 6], null],
      'not json': [null, null],
      'answered twice': [null, null],
      NaN: [null, null],
      infinite: [null, null],
      'index out of range': [null, null],
      'bool index': [null, null],
      'error without a reason': [null, null],
    });
  });

  it('the runner answers only plain JSON; the daemon its package started is killed before run_calls returns', () => {
    const app = join(root, 'app');
    mkdirSync(join(app, 'calc'), { recursive: true });
    const pidFile = join(root, 'daemon.pid');
    writeFileSync(
      join(app, 'calc', '__init__.py'),
      // A double-forked, setsid grandchild that would outlive the runner by half a minute; the
      // import waits (a minute at most) until it has written its pid.
      [
        'import os, time',
        'if os.fork() == 0:',
        '    os.setsid()',
        '    if os.fork() == 0:',
        `        open(${JSON.stringify(pidFile + '.new')}, "w").write(str(os.getpid()))`,
        `        os.rename(${JSON.stringify(pidFile + '.new')}, ${JSON.stringify(pidFile)})`,
        '        time.sleep(30)',
        '    os._exit(0)',
        'for _ in range(6000):',
        `    if os.path.exists(${JSON.stringify(pidFile)}):`,
        '        break',
        '    time.sleep(0.01)',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(app, 'calc', 'm.py'),
      'class Yes:\n    def __eq__(self, other):\n        return True\n\n\ndef yes():\n    return Yes()\n\n\n' +
        'def true():\n    return True\n\n\ndef boom():\n    raise ValueError("no")\n\n\ndef six():\n    return 6\n',
    );
    const out = python(`import json, os, grade_run, grade_spec
grade_run.contain_self()
calls = [["calc.m", f, []] for f in ("yes", "true", "boom", "six", "absent")]
reply, timed_out = grade_run.run_calls(open(${JSON.stringify(join(grader, 'runner.py'))}).read(), json.dumps(calls), ${JSON.stringify(app)}, 30, False)
results = grade_spec.decode_results(reply, len(calls))
pid = int(open(${JSON.stringify(pidFile)}).read())
print(json.dumps({"results": results, "timed_out": timed_out, "same_true_1": grade_spec.same(1, results[1][1]),
                  "daemon_alive": os.path.exists("/proc/%d" % pid), "left": list(grade_run.descendants())}))`);
    expect(out).toEqual({
      results: [
        ['error', 'returned no plain JSON value (TypeError)'],
        ['ok', true],
        ['error', 'raised ValueError'],
        ['ok', 6],
        ['error', 'raised AttributeError'],
      ],
      timed_out: false,
      same_true_1: false,
      daemon_alive: false,
      left: [],
    });
  });
});
