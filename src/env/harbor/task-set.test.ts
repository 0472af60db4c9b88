import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { familyByName } from '../family-by-name.ts';
import { KnobsError } from '../knobs.ts';
import { SUBMIT } from './action.ts';
import { HarborTaskError } from './load-tasks.ts';
import { ORACLE_COMMAND } from './oracle-policy.ts';
import { harborTaskSet, isHarborEnv } from './task-set.ts';
import { countLinesTask, TASK_TOML, writeTaskFolder } from './testing/task-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-task-set-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Three tasks, written out of name order: the set orders them by folder name.
const suite = join(root, 'suite');
countLinesTask(join(suite, 'c-lines'), 3);
countLinesTask(join(suite, 'a-lines'), 5);
writeTaskFolder(join(suite, 'b-nosolution'), {
  'instruction.md': 'Create /app/done.',
  'task.toml': TASK_TOML,
  'tests/test.sh': 'test -f /app/done && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
});

describe('a folder of Harbor task folders as a task family (env/harbor/task-set.ts)', () => {
  it('names: harbor:PATH is a task set, everything else a registered family', () => {
    expect(isHarborEnv(`harbor:${suite}`)).toBe(true);
    expect(isHarborEnv('kv-ledger')).toBe(false);
    expect(familyByName(`harbor:${suite}`).name).toBe(`harbor:${suite}`);
    expect(familyByName('kv-ledger').name).toBe('kv-ledger');
  });

  it('seed i is task i mod T, in folder-name order; train and eval cover the same T tasks', () => {
    const set = harborTaskSet(`harbor:${suite}`);
    expect(set.trainSeeds).toEqual({ start: 0, end: 3 });
    expect(set.evalSeeds).toEqual({ start: 0, end: 3 });
    const dirOf = (seed: number) => {
      const spec = set.envSpec!(seed, {});
      if (spec.kind !== 'harbor') throw new Error('expected a harbor spec');
      return spec.taskDir.split('/').pop();
    };
    expect([0, 1, 2, 3, 4, 5, -1].map(dirOf)).toEqual([
      'a-lines',
      'b-nosolution',
      'c-lines',
      'a-lines',
      'b-nosolution',
      'c-lines',
      'c-lines',
    ]);
  });

  it('an episode spec is data: the task folder, its backend and the knobs, nothing live', () => {
    const set = harborTaskSet(`harbor:${suite}`);
    const spec = set.envSpec!(0, { sandbox: 'bwrap', commandTimeoutSec: 7, outputBytes: 999 });
    expect(spec).toEqual({
      kind: 'harbor',
      taskDir: join(suite, 'a-lines'),
      sandbox: 'bwrap',
      exposeSolution: false,
      commandTimeoutSec: 7,
      outputBytes: 999,
    });
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
    // No Dockerfile in these folders: auto picks bubblewrap for every task.
    expect(set.envSpec!(1, {})).toMatchObject({ sandbox: 'bwrap' });
  });

  it('bad knobs and a missing path are clear errors, before any episode', () => {
    const set = harborTaskSet(`harbor:${suite}`);
    expect(() => set.envSpec!(0, { sandbox: 'podman' })).toThrow(KnobsError);
    expect(() => set.envSpec!(0, { nope: 1 })).toThrow(/nope/);
    // exposeSolution needs every task to ship solution/: the error names the one that does not.
    expect(() => set.create({ exposeSolution: true })).toThrow(/b-nosolution/);
    expect(() => harborTaskSet('harbor:')).toThrow(HarborTaskError);
    expect(() => harborTaskSet(`harbor:${join(root, 'missing')}`)).toThrow(HarborTaskError);
  });

  it('has no scripted summary writer; the policy writes its own', () => {
    const set = harborTaskSet(`harbor:${suite}`);
    expect(() => set.summaryWriters.oracle([], null as never)).toThrow(/scripted task family/);
    expect(set.tokenizer).toBe('qwen3');
    expect(set.rollout?.contextWindow).toBe(8192);
  });

  it.skipIf(!sandboxAvailable('task set episodes'))(
    'create() runs task seed mod T: the oracle passes the tasks that ship a solution',
    async () => {
      const solvable = join(root, 'solvable');
      countLinesTask(join(solvable, 'one'), 2);
      countLinesTask(join(solvable, 'two'), 4);
      const set = harborTaskSet(`harbor:${solvable}`);
      const knobs = { exposeSolution: true };
      for (const seed of [0, 1, 3]) {
        const env = set.create(knobs);
        try {
          const reset = await env.reset(seed);
          expect(reset.instruction).toMatch(/Count the lines/);
          const ran = await env.step(ORACLE_COMMAND);
          expect(ran.done).toBe(false);
          const graded = await env.step(SUBMIT);
          expect(graded).toMatchObject({ done: true, reward: 1 });
        } finally {
          await env.close?.();
        }
      }
    },
  );
});
