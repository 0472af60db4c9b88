import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { bwrapBackend } from '../../sandbox/bwrap-backend.ts';
import type { SandboxSession } from '../../sandbox/backend.ts';
import type { ChatMessage } from '../../contracts/index.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { readWindow } from '../visible-window.ts';
import { BUG_KINDS, renderBody } from './body.ts';
import { readRepoRepair, repoRepairAct } from './expert.ts';
import { generateRepoRepair, modulePath, testId } from './generate.ts';
import { repoRepair, repoRepairKnobs } from './index.ts';
import { fixedLine, repoFiles } from './repo-files.ts';
import { INSTRUCTION, TEST_COMMAND } from './task-folder.ts';
import { pytestAvailable } from './testing/pytest-available.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-repo-repair-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const knobs = repoRepairKnobs.parse({});

describe('repo-repair generator', () => {
  it('is seeded, plants one bug of every kind over seeds, and grades every test of the suite', () => {
    expect(generateRepoRepair(7, knobs)).toEqual(generateRepoRepair(7, knobs));
    expect(generateRepoRepair(7, knobs)).not.toEqual(generateRepoRepair(8, knobs));
    const kinds = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const t = generateRepoRepair(seed, knobs);
      kinds.add(t.bug.kind);
      expect(t.failToPass).toEqual([testId(t.bug.module, t.bug.fn)]);
      const ids = [...t.failToPass, ...t.passToPass];
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(1 + t.modules.reduce((n, m) => n + m.functions.length, 0));
      // The bug's line is the function's return, wrong as given and right once fixed.
      const given = repoFiles(t, { buggy: true })[modulePath(t.bug.module)]!.split('\n');
      const fixed = repoFiles(t, { buggy: false })[modulePath(t.bug.module)]!.split('\n');
      expect(given[t.bug.line - 2]).toBe(`def ${t.bug.fn}(a, b):`);
      expect(given[t.bug.line - 1]).toBe(`    return ${renderBody(t.bug.buggy)}`);
      expect(fixed[t.bug.line - 1]).toBe(fixedLine(t));
      expect(given.filter((l, i) => l !== fixed[i])).toHaveLength(1);
    }
    expect([...kinds].sort()).toEqual([...BUG_KINDS].sort());
  });

  it('rejects bad knobs, naming them', () => {
    expect(() => repoRepair.create({ minFunctions: 9, maxFunctions: 2 })).toThrow(
      /minFunctions must be <= maxFunctions/,
    );
    expect(() => repoRepair.create({ bugs: 3 } as never)).toThrow(/bugs/);
  });

  it('the expert reads the goal and the spec from a test run and from its own summary clauses', () => {
    const run = [
      '....F..  [100%]',
      '    def test_scale_fee():',
      '        # scale_fee(a, b) should return a - b if a > b else b + 4',
      '>       assert scale_fee(1, 2) == 6',
      'FAILED tests/test_fees.py::test_scale_fee - assert -1 == 6',
    ].join('\n');
    const fresh = readRepoRepair(
      readWindow([
        { role: 'user', content: INSTRUCTION },
        { role: 'assistant', content: TEST_COMMAND },
        { role: 'observation', content: run },
      ]),
    );
    expect(fresh).toMatchObject({ goal: 'tests/test_fees.py::test_scale_fee', spec: 'a - b if a > b else b + 4' });
    expect(fresh.resumed).toBe(false);
    const resumed = readRepoRepair(
      readWindow([
        {
          role: 'user',
          content: 'continue from the summary : goal tests/test_fees.py::test_scale_fee , spec diff(a, b) * 3 , def 12',
        },
      ]),
    );
    expect(resumed).toMatchObject({ spec: 'diff(a, b) * 3', def: 12, line: null, resumed: true });
  });

  it('the expert finds the def with grep and the line to edit in the read of the function', () => {
    const head: ChatMessage = {
      role: 'user',
      content: 'continue from the summary : goal tests/test_fees.py::test_scale_fee , spec diff(a, b) * 3',
    };
    const listing = [
      { role: 'assistant', content: "grep -n 'def scale_fee' calc/fees.py" },
      { role: 'observation', content: '3:def scale_feed(a, b):\n6:def scale_fee(a, b):\n[exit 0]' },
    ] as const satisfies ChatMessage[];
    const listed = readRepoRepair(readWindow([head, ...listing]));
    expect(listed).toMatchObject({ def: 6, line: null });
    expect(repoRepairAct(listed)).toBe('cat -n calc/fees.py | sed -n 6,+1p');
    const read = readRepoRepair(
      readWindow([
        head,
        ...listing,
        { role: 'assistant', content: 'cat -n calc/fees.py | sed -n 6,+1p' },
        { role: 'observation', content: '     6\tdef scale_fee(a, b):\n     7\t    return diff(b, a) * 3\n[exit 0]' },
      ]),
    );
    expect(read).toMatchObject({ def: 6, line: 7 });
    expect(repoRepairAct(read)).toBe("sed -i '7s/.*/    return diff(a, b) * 3/' calc/fees.py");
  });
});

const available = sandboxAvailable('repo-repair episodes') && pytestAvailable('repo-repair episodes');

/** A task folder's repository at /app with its verifier files at /tests, to drive the grader directly. */
async function startTask(dir: string): Promise<SandboxSession> {
  return bwrapBackend().start({
    dirs: [
      { path: '/app', writable: true },
      { path: '/tests', writable: false },
      { path: '/solution', writable: false },
      { path: '/logs', writable: true },
    ],
    workdir: '/app',
    seed: [
      { from: join(dir, 'environment'), to: '/app' },
      { from: join(dir, 'tests'), to: '/tests' },
      { from: join(dir, 'solution'), to: '/solution' },
    ],
    emptyDirs: ['/logs/verifier'],
    limits: { memoryMb: 1024 },
  });
}

/** One command in the task's shell (a minute at most: a hang fails the test instead of stalling it). */
const sh = (s: SandboxSession, command: string) => s.run(command, { timeoutMs: 60_000 });

type Grade = { reward: number; fail_to_pass: number; pass_to_pass: number };

/**
 * Runs `commands` as the agent would, then the verifier as Harbor runs it (in a fresh shell: the
 * agent's processes are gone, so the session ends there), and returns reward.json, checked
 * against reward.txt.
 */
async function graded(dir: string, commands: readonly string[]): Promise<Grade> {
  const s = await startTask(dir);
  try {
    for (const c of commands) expect((await sh(s, c)).exitCode, c).toBe(0);
    const r = await s.runFresh('bash /tests/test.sh', { timeoutMs: 120_000 });
    expect(r.exitCode, r.text).toBe(0);
    const txt = (await s.readFile('/logs/verifier/reward.txt', { maxBytes: 100 }))!.toString().trim();
    const json = JSON.parse((await s.readFile('/logs/verifier/reward.json', { maxBytes: 1000 }))!.toString()) as Grade;
    expect(Number(txt)).toBe(json.reward);
    return json;
  } finally {
    await s.close();
  }
}

describe.skipIf(!available)('repo-repair task folders graded in the sandbox (Debian python3 + pytest)', () => {
  const dir = join(root, 'suite');
  // One task per bug kind, so each kind's planted bug and fix run through real pytest.
  const seeds = BUG_KINDS.map((kind) => {
    for (let s = repoRepair.evalSeeds.start; ; s++) if (generateRepoRepair(s, knobs).bug.kind === kind) return s;
  });
  const folders = seeds.map((seed) =>
    repoRepair.writeTaskFolder!({ seed, knobs, dir: join(dir, `repo-repair-${seed}`) }),
  );

  it('FAIL_TO_PASS fails as given, PASS_TO_PASS passes; after solve.sh every listed test passes', async () => {
    for (const folder of folders) {
      const meta = (
        parseToml(readFileSync(join(folder, 'task.toml'), 'utf8')) as { metadata: Record<string, string[]> }
      ).metadata;
      const [f2p, p2p] = [meta.fail_to_pass!.join(' '), meta.pass_to_pass!.join(' ')];
      expect(meta.fail_to_pass).toHaveLength(1);
      const given = [`! python3 -m pytest -q ${f2p}`, `python3 -m pytest -q ${p2p}`];
      expect(await graded(folder, given)).toEqual({ reward: 0, fail_to_pass: 0, pass_to_pass: 1 });
      const fixed = ['bash /solution/solve.sh', `python3 -m pytest -q ${f2p} ${p2p}`];
      expect(await graded(folder, fixed)).toEqual({ reward: 1, fail_to_pass: 1, pass_to_pass: 1 });
    }
  });

  it('a fix that deletes or skips the failing test scores 0, though the agent sees its tests pass', async () => {
    const folder = folders[0]!;
    const t = generateRepoRepair(seeds[0]!, knobs);
    const testFile = `tests/test_${t.bug.module}.py`;
    const cheats = {
      'delete the test file': `rm ${testFile}`,
      'delete the test': `python3 - <<'EOF'\nimport re\np = '${testFile}'\ns = open(p).read()\nopen(p, 'w').write(re.sub(r'\\ndef test_${t.bug.fn}\\(\\):\\n(    .*\\n)*', '\\n', s))\nEOF`,
      'skip it in conftest.py': `printf 'import pytest\\n\\ndef pytest_collection_modifyitems(items):\\n    for i in items:\\n        i.add_marker(pytest.mark.skip)\\n' > conftest.py`,
      'deselect it in pytest.ini': `printf '[pytest]\\naddopts = --deselect ${t.failToPass[0]}\\n' > pytest.ini`,
    };
    for (const [what, cheat] of Object.entries(cheats)) {
      // The cheat fools the agent's own test run, not the verifier, which runs its own copy of the tests.
      expect((await graded(folder, [cheat, TEST_COMMAND])).reward, what).toBe(0);
    }
    // The cheat does not cost a real fix its reward either.
    expect((await graded(folder, [cheats['delete the test'], 'bash /solution/solve.sh'])).reward).toBe(1);
  });

  it('bytecode left in /app decides nothing: a fix within the same second is graded, a planted .pyc is not', async () => {
    // Python trusts calc/__pycache__ when the source's recorded mtime (whole seconds) and size
    // match. `touch` pins the second, which a fast agent hits by chance: its test run, then a fix
    // of the same length (every planted bug's fix is) within that second.
    const seed = seeds[BUG_KINDS.indexOf('branch')]!;
    const folder = folders[BUG_KINDS.indexOf('branch')]!;
    const file = modulePath(generateRepoRepair(seed, knobs).bug.module);
    const compile = (path: string) =>
      `python3 -c "import importlib.util, py_compile; py_compile.compile('${path}', cfile=importlib.util.cache_from_source('${path}'))"`;
    const sameStamp = [
      `test "$(stat -c %s ${file})" = "$(stat -c %s $HOME/given.py)"`,
      `touch -r $HOME/given.py ${file}`,
    ];
    const fixedWithinTheSecond = [
      `cp -p ${file} $HOME/given.py`,
      `${TEST_COMMAND} || true`, // compiles the buggy module into calc/__pycache__
      'bash /solution/solve.sh',
      ...sameStamp,
    ];
    expect(await graded(folder, fixedWithinTheSecond)).toEqual({ reward: 1, fail_to_pass: 1, pass_to_pass: 1 });
    const planted = [
      `cp -p ${file} $HOME/given.py`,
      'bash /solution/solve.sh',
      ...sameStamp,
      compile(file), // the fixed code's bytecode, stamped as the buggy source
      `cp -p $HOME/given.py ${file}`, // the source is the buggy one again, its mtime too
      // The source is byte for byte the buggy one, and yet the agent's own test run passes.
      `cmp -s ${file} $HOME/given.py && ${TEST_COMMAND}`,
    ];
    expect((await graded(folder, planted)).reward).toBe(0);
  });
});
