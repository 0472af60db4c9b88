import { spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { devNull, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crlAsync } from '../../cli/testing/spawn-crl.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { torchAvailable } from '../testing/torch-available.ts';
import { listeningTrainer } from '../testing/torch-listen.ts';
import { CRL_TORCH_PYTHON_PATH, DEFAULT_TORCH_COMMAND } from './trainer-target.ts';

/**
 * The trainer installed as a Python package (python/pyproject.toml), as on a GPU machine: a fresh
 * venv that sees Debian's torch (--system-site-packages), `pip install` of a copy of python/
 * (offline: --no-index --no-build-isolation --no-deps), the copy removed, then `python -m crl_torch
 * --listen` from outside the repository with no PYTHONPATH, and one iteration of a real `crl train
 * --trainer torch --trainer-url` against it.
 */
const PYTHON = DEFAULT_TORCH_COMMAND[0]!;

/** What building and installing the package in a venv needs from the host python, and its Debian package. */
const NEEDS: readonly (readonly [module: string, debian: string])[] = [
  ['ensurepip', 'python3-venv'], // the venv's own pip and setuptools
  ['pip', 'python3-pip'],
  ['setuptools', 'python3-setuptools'],
  ['wheel', 'python3-wheel'], // setuptools before 70.1 builds wheels with it
];

function pipAvailable(suite: string): boolean {
  const missing = NEEDS.filter(
    ([module]) => spawnSync(PYTHON, ['-c', `import ${module}`], { timeout: 120_000 }).status !== 0,
  );
  if (missing.length === 0) return true;
  const reason = `${PYTHON} cannot import ${missing.map(([m]) => m).join(', ')}`;
  const install = `apt-get install ${missing.map(([, d]) => d).join(' ')}`;
  if (process.env.CRL_REQUIRE_TORCH === '1') {
    throw new Error(`${suite}: CRL_REQUIRE_TORCH=1 but the package cannot be installed here: ${reason} (${install})`);
  }
  process.stderr.write(
    `\n*** SKIPPED ${suite}: the package cannot be installed here (${reason}). ` +
      `Debian: ${install}; set CRL_REQUIRE_TORCH=1 to make this a failure. ***\n\n`,
  );
  return false;
}

const SUITE = 'crl_torch installed with pip';
const run = torchAvailable(SUITE) && pipAvailable(SUITE) ? describe : describe.skip;

/** The host's environment without anything that points python or pip elsewhere. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(PYTHON|PIP_|VIRTUAL_ENV$)/.test(k)) env[k] = v;
  return env;
}

run(SUITE, () => {
  const root = mkdtempSync(join(tmpdir(), 'crl-torch-installed-'));
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await waitFor(() => children.every((c) => c.exitCode !== null || c.signalCode !== null), {
      what: 'the installed trainer to exit',
    });
    rmSync(root, { recursive: true, force: true });
  });
  const TIMEOUT = 600_000;

  it(
    'installs into a fresh venv and trains one iteration of crl train over TCP from there',
    async () => {
      const venv = join(root, 'venv');
      const made = spawnSync(PYTHON, ['-m', 'venv', '--system-site-packages', venv], {
        encoding: 'utf8',
        env: cleanEnv(),
        timeout: 300_000,
      });
      expect(made.status, made.stderr).toBe(0);

      // A copy of python/: pip builds in the source folder, which stays out of the checkout.
      const src = join(root, 'src');
      cpSync(CRL_TORCH_PYTHON_PATH, src, { recursive: true, filter: (p) => !p.endsWith('__pycache__') });
      const pipEnv = {
        ...cleanEnv(),
        PIP_CONFIG_FILE: devNull, // the host's pip.conf (indexes, find-links) plays no part
        PIP_NO_CACHE_DIR: '1',
        PIP_DISABLE_PIP_VERSION_CHECK: '1',
      };
      const pip = spawnSync(
        join(venv, 'bin', 'pip'),
        ['install', '--no-index', '--no-build-isolation', '--no-deps', src],
        { encoding: 'utf8', env: pipEnv, cwd: root, timeout: 300_000 },
      );
      expect(pip.status, `${pip.stdout}\n${pip.stderr}`).toBe(0);
      expect(pip.stdout).toMatch(/Successfully installed crl-torch-/);
      rmSync(src, { recursive: true, force: true });

      // From outside the repository with no PYTHONPATH, the import is the installed package.
      const python = join(venv, 'bin', 'python');
      const env = cleanEnv();
      const where = spawnSync(python, ['-c', 'import crl_torch, torch; print(crl_torch.__file__)'], {
        encoding: 'utf8',
        env,
        cwd: root,
        timeout: 120_000,
      });
      expect(where.status, where.stderr).toBe(0);
      expect(where.stdout.trim().startsWith(`${venv}/lib/`), where.stdout).toBe(true);
      expect(where.stdout.trim()).toMatch(/\/site-packages\/crl_torch\/__init__\.py$/);

      const trainer = await listeningTrainer(children, { command: [python, '-m', 'crl_torch'], env, cwd: root });
      const out = join(root, 'run');
      const r = await crlAsync(
        [
          'train',
          '--from-scratch',
          '--env',
          'chunk-sum',
          '--model',
          'tiny',
          '--batch',
          '2',
          '--iterations',
          '1',
          '--trainer',
          'torch',
          '--trainer-url',
          `tcp://127.0.0.1:${trainer.port}`,
          '--out',
          out,
        ],
        { timeoutMs: TIMEOUT },
      );
      expect(r.code, r.stderr).toBe(0);
      const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n');
      expect(lines.map((l) => (JSON.parse(l) as { iteration: number }).iteration)).toEqual([1]);
      const { metrics } = JSON.parse(lines[0]!) as { metrics: Record<string, number | null> };
      expect(Number.isFinite(metrics['optim/grad_norm']), JSON.stringify(metrics)).toBe(true);
      // The run was this trainer's client, and ended it (the server keeps listening).
      await waitFor(() => /crl_torch: client 127\.0\.0\.1:\d+ done/.test(trainer.stderr()), {
        what: 'the installed trainer to log its client done',
      });
      expect(trainer.child.exitCode).toBe(null);
    },
    TIMEOUT,
  );
});
