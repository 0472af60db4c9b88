import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import '../env/builtin.ts';
import { familyNames, getFamily } from '../env/registry.ts';
import { pytestAvailable } from '../env/repo-repair/testing/pytest-available.ts';
import { sandboxAvailable } from '../sandbox/testing/sandbox-available.ts';
import { crlAsync } from './testing/spawn-crl.ts';

/**
 * A newcomer's first two commands: `crl sft` makes a base for a family in its tokenizer, and
 * `crl train` trains it for the same family and tokenizer with no other flag. The rollout sizes
 * (the window above all) must come out the same in both, for every family.
 */
const dir = mkdtempSync(join(tmpdir(), 'crl-sft-train-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Families whose episodes run in a sandbox (shell-ledger) or also need pytest (repo-repair). */
const runnable = (name: string): boolean => {
  if (name === 'shell-ledger') return sandboxAvailable('sft then train (shell-ledger)');
  if (name === 'repo-repair')
    return sandboxAvailable('sft then train (repo-repair)') && pytestAvailable('sft then train (repo-repair)');
  return true;
};

describe('crl sft, then crl train on its checkpoint', () => {
  for (const name of familyNames()) {
    const tokenizer = getFamily(name).tokenizer ?? 'word';
    it.skipIf(!runnable(name))(
      `${name} (${tokenizer}): the base trains with no other flag`,
      async () => {
        const base = join(dir, `${name}-base`);
        const run = join(dir, `${name}-run`);
        const common = ['--env', name, '--tokenizer', tokenizer];
        const sft = await crlAsync(
          ['sft', ...common, '--model', 'tiny', '--episodes', '2', '--epochs', '1', '--held-out', '0', '--out', base],
          { timeoutMs: 450_000 },
        );
        expect(sft.code, sft.stderr).toBe(0);
        const train = await crlAsync(
          ['train', ...common, '--init', base, '--batch', '2', '--iterations', '1', '--out', run],
          { timeoutMs: 450_000 },
        );
        expect(train.code, train.stderr).toBe(0);
        expect(JSON.parse(train.last)).toMatchObject({ iteration: 1 });
      },
      960_000, // repo-repair's episodes run pytest in a sandbox: minutes on a loaded machine
    );
  }
});
