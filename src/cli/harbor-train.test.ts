import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countLinesTask } from '../env/harbor/testing/task-folders.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { crl } from './testing/spawn-crl.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-harbor-train-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const available = sandboxAvailable('crl train / eval --env harbor:');

// Every error a user can make here is one line on stderr, exit code 2, no stack trace.
function expectUserError(args: string[], message: RegExp): void {
  const r = crl(args);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  expect(r.stderr).toMatch(message);
  expect(r.code).toBe(2);
}

describe.skipIf(!available)('training on task folders: crl train / eval --env harbor:DIR (spawned)', () => {
  const tasks = join(root, 'tasks');
  countLinesTask(join(tasks, 'three'), 3);
  countLinesTask(join(tasks, 'five'), 5);
  const env = `harbor:${tasks}`;
  const small = ['--model', 'tiny', '--context', '1024'];

  it('--actor expert (the oracle, with exposeSolution) solves every task of the batch', () => {
    const out = join(root, 'expert-run');
    const r = crl([
      'train',
      '--env',
      env,
      '--actor',
      'expert',
      '--knobs',
      '{"exposeSolution":true}',
      '--batch',
      '3',
      '--iterations',
      '1',
      ...small,
      '--out',
      out,
    ]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.last)).toMatchObject({ runDir: out, iteration: 1, successRate: 1 });
    // The run records the task set and the C it was given; the folder family's caps (sized for
    // C = 8192) scaled down to fit it, or the config would not have resolved.
    const { config } = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config.env).toEqual({ name: env, knobs: { exposeSolution: true } });
    expect(config.rollout.contextWindow).toBe(1024);
  });

  it('a policy from scratch trains on the folders, then crl eval runs every folder once per sample', () => {
    const out = join(root, 'scratch-run');
    const r = crl([
      'train',
      '--env',
      env,
      '--from-scratch',
      '--batch',
      '2',
      '--iterations',
      '1',
      ...small,
      '--out',
      out,
    ]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.last);
    expect(summary).toMatchObject({ runDir: out, iteration: 1 });
    expect(summary.successRate).toBeGreaterThanOrEqual(0);

    const result = join(root, 'scratch-eval.json');
    const e = crl([
      'eval',
      '--policy',
      out,
      '--env',
      env,
      '--samples',
      '4',
      '--windows',
      '1',
      '--context',
      '1024',
      '--out',
      result,
    ]);
    expect(e.stderr).not.toMatch(/\n\s+at /);
    expect(e.code).toBe(0);
    expect(JSON.parse(e.last)).toMatchObject({ out: result, env, summaryWriter: 'self' });
    const written = JSON.parse(readFileSync(result, 'utf8'));
    // Default --tasks for a task set: one per folder.
    expect(written.taskSeeds).toHaveLength(2);
    expect(written.modes.x1).toMatchObject({ tasks: 2, samples: 8 });
  });

  it('the oracle passes every folder under crl eval', () => {
    const result = join(root, 'oracle-eval.json');
    const e = crl([
      'eval',
      '--policy',
      'expert',
      '--env',
      env,
      '--knobs',
      '{"exposeSolution":true}',
      '--samples',
      '4',
      '--windows',
      '1',
      '--out',
      result,
    ]);
    expect(e.stderr).not.toMatch(/\n\s+at /);
    expect(e.code).toBe(0);
    expect(JSON.parse(e.last).modes.x1.passAt1).toBe(1);
  });

  it('mistakes are clear errors before anything runs', () => {
    expectUserError(
      ['sft', '--env', env, '--out', join(root, 'sft')],
      /crl sft learns from a task family's scripted expert/,
    );
    expectUserError(
      ['train', '--env', env, '--actor', 'expert', ...small, '--out', join(root, 'no-solution')],
      /exposeSolution/,
    );
    expectUserError(
      ['eval', '--policy', 'expert', '--env', env, '--out', join(root, 'no-solution.json')],
      /exposeSolution/,
    );
    expectUserError(
      [
        'train',
        '--env',
        env,
        '--knobs',
        '{"sandbox":"docker"}',
        '--from-scratch',
        ...small,
        '--out',
        join(root, 'docker'),
      ],
      /needs environment\/Dockerfile/,
    );
    expectUserError(['train', '--env', env, '--knobs', '{"sandbx":"bwrap"}', '--from-scratch', ...small], /sandbx/);
    expectUserError(['train', '--env', `harbor:${join(root, 'missing')}`, '--from-scratch', ...small], /missing/);
    expectUserError(
      ['eval', '--policy', 'expert', '--env', env, '--summary-writer', 'oracle', '--out', join(root, 'w.json')],
      /no scripted summary writer/,
    );
  });
});
