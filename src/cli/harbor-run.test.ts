import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processesWithArg } from '../sandbox/testing/host-processes.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { countLinesTask, TASK_TOML, writeTaskFolder } from '../env/harbor/testing/task-folders.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import { crl } from './testing/spawn-crl.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-harbor-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const available = sandboxAvailable('crl run --env harbor:');

describe.skipIf(!available)('crl run --env harbor:DIR (spawned)', () => {
  const suite = join(root, 'suite');
  const hostFile = join(root, 'host-file.txt');
  writeFileSync(hostFile, 'original');
  countLinesTask(join(suite, 'count-lines'), 9);
  writeTaskFolder(join(suite, 'setup-and-json'), {
    'instruction.md': 'Write the sum of the numbers in /app/nums to /app/sum.',
    'task.toml': TASK_TOML,
    'environment/setup.sh': 'seq 1 10 > /app/nums\n',
    'tests/test.sh':
      'if [ "$(cat /app/sum)" = 55 ]; then r=1; else r=0; fi; echo "{\\"reward\\": $r}" > /logs/verifier/reward.json\n',
    'solution/solve.sh':
      "cd /app && paste -sd+ nums | bc > sum 2>/dev/null || awk '{s+=$1} END {print s}' nums > sum\n",
  });
  writeTaskFolder(join(suite, 'escape-attempt'), {
    'instruction.md': 'x',
    'task.toml': TASK_TOML,
    'tests/test.sh': 'test -f /app/done && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
    'solution/solve.sh': [
      'curl -s -m 2 http://example.com/ && echo NET',
      `echo pwned > ${hostFile}`,
      'kill -9 -1',
      'nohup sleep 98760201 >/dev/null 2>&1 &',
      'touch /app/done',
    ].join('\n'),
  });

  it('harbor-oracle: runs each solution/solve.sh in the sandbox, then tests/test.sh; Pass@1 1 in the last JSON line', () => {
    const out = join(root, 'oracle.jsonl');
    const r = crl(['run', '--env', `harbor:${suite}`, '--policy', 'harbor-oracle', '--episodes', '6', '--out', out]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(summary).toMatchObject({ passAt1: 1, episodes: 6, truncated: 0 });
    const records = readRecordsFile(out);
    const byId = [...records].sort(
      (a, b) => Number(a.episodeId.split('-').pop()) - Number(b.episodeId.split('-').pop()),
    );
    expect(byId.map((x) => x.env)).toEqual([
      'harbor:count-lines',
      'harbor:escape-attempt',
      'harbor:setup-and-json',
      'harbor:count-lines',
      'harbor:escape-attempt',
      'harbor:setup-and-json',
    ]);
    expect(records.every((x) => x.outcome === 'success' && x.steps === 2)).toBe(true);
    // The escape attempt ended normally and left nothing on the host.
    expect(readFileSync(hostFile, 'utf8')).toBe('original');
    expect(processesWithArg('98760201')).toEqual([]);
  });

  it('harbor-nop submits at once and passes nothing', () => {
    const r = crl([
      'run',
      '--env',
      `harbor:${suite}`,
      '--policy',
      'harbor-nop',
      '--episodes',
      '3',
      '--out',
      join(root, 'nop.jsonl'),
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ passAt1: 0, episodes: 3 });
  });

  it('refuses a Dockerfile-only task on bwrap and a missing solution with exit 2 and a clear message', () => {
    const docker = writeTaskFolder(join(root, 'docker-only'), {
      'instruction.md': 'x',
      'task.toml': TASK_TOML,
      'environment/Dockerfile': 'FROM ubuntu:24.04\n',
      'tests/test.sh': 'true',
      'solution/solve.sh': 'true',
    });
    const a = crl([
      'run',
      '--env',
      `harbor:${docker}`,
      '--sandbox',
      'bwrap',
      '--policy',
      'harbor-oracle',
      '--out',
      join(root, 'x.jsonl'),
    ]);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(
      /environment\/Dockerfile needs a container engine \(--sandbox docker\)\. The bwrap sandbox runs/s,
    );
    expect(a.stderr).not.toMatch(/\n\s+at /);
    const noSolution = writeTaskFolder(join(root, 'no-solution'), {
      'instruction.md': 'x',
      'task.toml': TASK_TOML,
      'tests/test.sh': 'true',
    });
    const b = crl([
      'run',
      '--env',
      `harbor:${noSolution}`,
      '--policy',
      'harbor-oracle',
      '--out',
      join(root, 'y.jsonl'),
    ]);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/1 task\(s\) have none: no-solution/);
  });

  it('crl export-tasks writes shell-ledger tasks as folders that harbor-oracle passes and harbor-nop fails', () => {
    const gen = join(root, 'generated');
    const e = crl(['export-tasks', '--env', 'shell-ledger', '--episodes', '4', '--out', gen]);
    expect(e.code).toBe(0);
    expect(JSON.parse(e.stdout.trim().split('\n').pop()!)).toEqual({ tasks: 4, out: gen });
    const oracle = crl([
      'run',
      '--env',
      `harbor:${gen}`,
      '--policy',
      'harbor-oracle',
      '--episodes',
      '4',
      '--out',
      join(root, 'g1.jsonl'),
    ]);
    expect(JSON.parse(oracle.stdout.trim().split('\n').pop()!)).toMatchObject({ passAt1: 1, episodes: 4 });
    const nop = crl([
      'run',
      '--env',
      `harbor:${gen}`,
      '--policy',
      'harbor-nop',
      '--episodes',
      '4',
      '--out',
      join(root, 'g2.jsonl'),
    ]);
    expect(JSON.parse(nop.stdout.trim().split('\n').pop()!)).toMatchObject({ passAt1: 0, episodes: 4 });
    const again = crl(['export-tasks', '--env', 'shell-ledger', '--out', gen]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists and is not empty/);
  });

  it('refuses instruction.md linked to a host file or to /dev/zero with exit 2, quoting nothing of it', () => {
    const secret = 'host-secret-4be0a1';
    const target = join(root, 'secret.txt');
    writeFileSync(target, `${secret}\n`);
    for (const [name, to] of [
      ['linked-host', target],
      ['linked-zero', '/dev/zero'],
    ] as const) {
      const dir = writeTaskFolder(join(root, name), { 'task.toml': TASK_TOML, 'tests/test.sh': 'true\n' });
      symlinkSync(to, join(dir, 'instruction.md'));
      const outDir = mkdtempSync(join(root, `${name}-out-`));
      const r = crl(['run', '--env', `harbor:${dir}`, '--policy', 'harbor-oracle', '--out', join(outDir, 'r.jsonl')], {
        timeoutMs: 60_000,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/instruction\.md is a symbolic link/);
      expect(r.stdout + r.stderr).not.toContain(secret);
      for (const f of readdirSync(outDir)) expect(readFileSync(join(outDir, f), 'utf8')).not.toContain(secret);
    }
  });

  it("a reward.txt of 0x10 is the agent's failure, not a fault: reward 0, no envErrors, no warning", () => {
    // The verifier runs the agent's code, which can write the file: a fault here would erase a failure.
    const dir = writeTaskFolder(join(root, 'hex-reward'), {
      'instruction.md': 'x',
      'task.toml': TASK_TOML,
      'tests/test.sh': 'echo 0x10 > /logs/verifier/reward.txt\n',
    });
    const out = join(root, 'hex.jsonl');
    const r = crl(['run', '--env', `harbor:${dir}`, '--policy', 'harbor-nop', '--episodes', '2', '--out', out]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.last)).toMatchObject({ passAt1: 0, episodes: 2, truncated: 0, envErrors: 0 });
    expect(r.stderr).not.toMatch(/ended in a fault/);
    const records = readRecordsFile(out);
    expect(records.map((x) => [x.outcome, x.reward])).toEqual([
      ['failure', 0],
      ['failure', 0],
    ]);
    expect(records.flatMap((x) => x.events.filter((e) => e.kind === 'env-error'))).toEqual([]);
    expect(existsSync(out)).toBe(true);
  });
});
