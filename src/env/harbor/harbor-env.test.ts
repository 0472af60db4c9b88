import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processesWithArg } from '../../sandbox/testing/host-processes.ts';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { parseShellAction } from './action.ts';
import { HarborEnv } from './harbor-env.ts';
import { HarborTaskError, loadHarborTask, loadHarborTasks } from './load-tasks.ts';
import { taskSandbox } from './task-sandbox.ts';
import { countLinesTask, TASK_TOML, writeTaskFolder } from './testing/task-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-harbor-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => join(root, `t${n++}`);

describe('Harbor task folders: loading', () => {
  it('reads instruction, task.toml with Harbor defaults, the environment tree, tests and solution', () => {
    const t = loadHarborTask(countLinesTask(fresh()));
    expect(t.instruction).toMatch(/^Count the lines/);
    expect(t.config.agent.timeout_sec).toBe(60);
    expect(t.config.verifier.timeout_sec).toBe(30);
    expect(t.config.environment.memory_mb).toBe(1024);
    expect(t.environmentDir).not.toBeNull();
    expect(t.solutionDir).not.toBeNull();
    const bare = loadHarborTask(
      writeTaskFolder(fresh(), { 'instruction.md': 'x', 'task.toml': '', 'tests/test.sh': 'true' }),
    );
    expect(bare.config.agent.timeout_sec).toBe(600); // Harbor's defaults
    expect(bare.config.environment).toMatchObject({ cpus: 1, memory_mb: 2048 });
    expect(bare.environmentDir).toBeNull();
    expect(bare.solutionDir).toBeNull();
  });

  it('puts a Dockerfile-only task on docker, refusing it on bwrap with what is supported; a setup script lets bwrap run it', () => {
    const files = { 'instruction.md': 'x', 'task.toml': TASK_TOML, 'tests/test.sh': 'true' };
    const docker = loadHarborTask(
      writeTaskFolder(fresh(), { ...files, 'environment/Dockerfile': 'FROM ubuntu:24.04\n' }),
    );
    expect(docker.dockerfile).toBe(true);
    expect(taskSandbox(docker, 'docker')).toBe('docker');
    expect(() => taskSandbox(docker, 'bwrap')).toThrow(HarborTaskError);
    expect(() => taskSandbox(docker, 'bwrap')).toThrow(
      /environment\/Dockerfile needs a container engine \(--sandbox docker\).*directory tree that is copied into the workspace.*setup\.sh/,
    );
    const plain = loadHarborTask(countLinesTask(fresh()));
    expect(taskSandbox(plain, 'auto')).toBe('bwrap');
    expect(() => taskSandbox(plain, 'docker')).toThrow(/needs environment\/Dockerfile or \[environment\] docker_image/);
    const withSetup = writeTaskFolder(fresh(), {
      ...files,
      'environment/Dockerfile': 'FROM ubuntu:24.04\n',
      'environment/setup.sh': 'echo hi > /app/made\n',
      'environment/keep.txt': 'k',
    });
    const t = loadHarborTask(withSetup);
    expect(taskSandbox(t, 'bwrap')).toBe('bwrap');
    expect(t.setupScript).toBe('echo hi > /app/made\n');
    expect(t.environmentSkip).toEqual(['Dockerfile', 'setup.sh']);
  });

  it('names what is missing or invalid', () => {
    expect(() => loadHarborTask(writeTaskFolder(fresh(), { 'task.toml': '' }))).toThrow(/instruction\.md is missing/);
    expect(() => loadHarborTask(writeTaskFolder(fresh(), { 'instruction.md': 'x', 'task.toml': '' }))).toThrow(
      /tests\/test\.sh is missing/,
    );
    const bad = writeTaskFolder(fresh(), {
      'instruction.md': 'x',
      'task.toml': '[agent]\ntimeout_sec = "soon"\n',
      'tests/test.sh': '',
    });
    expect(() => loadHarborTask(bad)).toThrow(/agent\.timeout_sec/);
    const notToml = writeTaskFolder(fresh(), { 'instruction.md': 'x', 'task.toml': '[agent', 'tests/test.sh': '' });
    expect(() => loadHarborTask(notToml)).toThrow(/not valid TOML/);
    const verdict = (v: string) =>
      loadHarborTask(
        writeTaskFolder(fresh(), {
          'instruction.md': 'x',
          'task.toml': `[metadata]\nverdict = ${v}\n`,
          'tests/test.sh': '',
        }),
      );
    expect(verdict('"signed"').config.metadata?.verdict).toBe('signed');
    expect(() => verdict('"sign"')).toThrow(/metadata\.verdict: the only verdict is "signed"/);
  });

  it('takes one task folder or a folder of them', () => {
    const suite = fresh();
    countLinesTask(join(suite, 'b-task'));
    countLinesTask(join(suite, 'a-task'));
    writeFileSync(join(suite, 'README'), 'not a task');
    expect(loadHarborTasks(suite).map((t) => t.name)).toEqual(['a-task', 'b-task']);
    expect(loadHarborTasks(join(suite, 'a-task')).map((t) => t.name)).toEqual(['a-task']);
    const empty = fresh();
    writeTaskFolder(empty, { 'notes/readme.txt': 'x' });
    expect(() => loadHarborTasks(empty)).toThrow(/holds no Harbor task folder/);
  });
});

describe('the action format', () => {
  it('takes the whole turn, or the first fenced block, and `submit` to finish', () => {
    expect(parseShellAction('ls -la\n')).toEqual({ kind: 'command', command: 'ls -la' });
    expect(parseShellAction('I will look.\n```bash\ncd /app\nls\n```\nthen more')).toEqual({
      kind: 'command',
      command: 'cd /app\nls',
    });
    expect(parseShellAction('submit')).toEqual({ kind: 'submit' });
    expect(parseShellAction('```\nsubmit\n```')).toEqual({ kind: 'submit' });
    expect(parseShellAction('  \n ')).toEqual({ kind: 'empty' });
    expect(parseShellAction('echo submit')).toEqual({ kind: 'command', command: 'echo submit' });
  });
});

const available = sandboxAvailable('Harbor environment tests');

async function play(env: HarborEnv, actions: string[]) {
  const { instruction } = await env.reset(0);
  const observations: string[] = [];
  try {
    for (const a of actions) {
      const out = await env.step(a);
      observations.push(out.observation);
      if (out.done) return { instruction, observations, reward: out.reward, done: true };
    }
    return { instruction, observations, reward: 0, done: false };
  } finally {
    await env.close();
  }
}

describe.skipIf(!available)('HarborEnv in the sandbox', () => {
  it('runs the agent in /app with the environment tree, then the tests, and reads reward.txt', async () => {
    const task = loadHarborTask(countLinesTask(fresh(), 5));
    const good = await play(new HarborEnv({ task }), ['ls data', 'wc -l < data/input.txt > answer.txt', 'submit']);
    expect(good.instruction).toMatch(/Count the lines[\s\S]*Reply `submit` when the task is done/);
    expect(good.observations[0]).toBe('input.txt\n[exit 0]');
    expect(good).toMatchObject({ done: true, reward: 1 });
    const bad = await play(new HarborEnv({ task }), ['echo 4 > answer.txt', 'submit']);
    expect(bad).toMatchObject({ done: true, reward: 0 });
  });

  it('never shows the agent tests/ or solution/, and puts the tests in place only for the verifier', async () => {
    const dir = countLinesTask(fresh());
    writeFileSync(join(dir, 'tests', 'secret-expected.txt'), 'SECRET-EXPECTED');
    const task = loadHarborTask(dir);
    const r = await play(new HarborEnv({ task }), [
      'ls -A /tests; ls /solution; grep -rs SECRET-EXPECTED / --exclude-dir=proc --exclude-dir=usr; echo "[done]"',
    ]);
    expect(r.observations[0]).not.toContain('SECRET-EXPECTED');
    expect(r.observations[0]).not.toContain('test.sh');
    expect(r.observations[0]).toMatch(/ls: cannot access '\/solution'/);
  });

  it('runs the verifier in a fresh shell after killing the agent: no shell function or leftover process can fake the reward', async () => {
    const task = loadHarborTask(countLinesTask(fresh()));
    const r = await play(new HarborEnv({ task }), [
      'bash() { mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; }; export -f bash',
      '(while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; touch wrote.marker; sleep 0.01; done) & disown',
      // Not a fixed sleep: wait until the loop has written again, through the symlink.
      'ln -sf /etc/hostname /logs/verifier/reward.txt; rm -f wrote.marker; until [ -e wrote.marker ]; do sleep 0.01; done',
      'submit',
    ]);
    expect(r.observations[2]).toMatch(/\[exit 0\]$/); // the loop did write after the symlink
    expect(r).toMatchObject({ done: true, reward: 0 });
  });

  it('runs environment/setup.sh first and reads reward.json', async () => {
    const dir = writeTaskFolder(fresh(), {
      'instruction.md': 'Double the number in /app/n.',
      'task.toml': TASK_TOML,
      'environment/setup.sh': 'echo 21 > /app/n\n',
      'environment/Dockerfile': 'FROM debian\n',
      'tests/test.sh':
        'v=$(cat /app/out 2>/dev/null); if [ "$v" = 42 ]; then s=1; else s=0; fi\necho "{\\"reward\\": $s, \\"speed\\": 0.5}" > /logs/verifier/reward.json\n',
    });
    const task = loadHarborTask(dir);
    const r = await play(new HarborEnv({ task }), ['ls; cat n', 'echo $(( $(cat n) * 2 )) > out', 'submit']);
    expect(r.observations[0]).toBe('n\n21\n[exit 0]'); // no Dockerfile or setup.sh copied
    expect(r).toMatchObject({ done: true, reward: 1 });
  });

  it('verifies when the agent time runs out, and cuts long commands at the time left', async () => {
    const dir = countLinesTask(fresh());
    writeFileSync(join(dir, 'task.toml'), TASK_TOML.replace('timeout_sec = 60.0', 'timeout_sec = 1.5'));
    const task = loadHarborTask(dir);
    const r = await play(new HarborEnv({ task }), ['wc -l < data/input.txt > answer.txt', 'sleep 30', 'echo never']);
    expect(r.observations[1]).toMatch(/timed out after 1\.\d s[\s\S]*ran out; verifier reward 1/);
    expect(r).toMatchObject({ done: true, reward: 1 });
  });

  it('reports a missing reward and a verifier timeout as reward 0, saying why', async () => {
    const none = writeTaskFolder(fresh(), { 'instruction.md': 'x', 'task.toml': TASK_TOML, 'tests/test.sh': 'exit 3' });
    const a = await play(new HarborEnv({ task: loadHarborTask(none) }), ['submit']);
    expect(a.observations[0]).toMatch(/reward 0: no reward\.txt or reward\.json to read.*test\.sh exit 3/);
    const slow = writeTaskFolder(fresh(), {
      'instruction.md': 'x',
      'task.toml': TASK_TOML.replace('timeout_sec = 30.0', 'timeout_sec = 0.5'),
      'tests/test.sh': 'sleep 30; echo 1 > /logs/verifier/reward.txt',
    });
    const b = await play(new HarborEnv({ task: loadHarborTask(slow) }), ['submit']);
    expect(b.observations[0]).toMatch(/the verifier timed out after 0\.5 s/);
    expect(b.reward).toBe(0);
  });

  it('a solution that tries to escape ends normally and leaks nothing to the host', async () => {
    const secret = randomBytes(8).toString('hex');
    const hostFile = join(root, `host-${secret}.txt`);
    writeFileSync(hostFile, 'original');
    const dir = writeTaskFolder(fresh(), {
      'instruction.md': 'x',
      'task.toml': TASK_TOML,
      'tests/test.sh': 'echo 1 > /logs/verifier/reward.txt',
      'solution/solve.sh': [
        `curl -s -m 2 http://example.com >/dev/null && echo NET`,
        `cat ${hostFile}; echo pwned > ${hostFile}`,
        `kill -9 -1`,
        `nohup sleep 9876002${secret.slice(0, 3).replace(/\D/g, '1')} >/dev/null 2>&1 &`,
        `echo done`,
      ].join('\n'),
    });
    const env = new HarborEnv({ task: loadHarborTask(dir), exposeSolution: true });
    const r = await play(env, ['bash /solution/solve.sh', 'submit']);
    expect(r.done).toBe(true);
    expect(r.observations.join('\n')).not.toContain('NET');
    expect(readFileSync(hostFile, 'utf8')).toBe('original');
    expect(processesWithArg('9876002')).toEqual([]);
  });
});
