import { spawnSync } from 'node:child_process';

/** The sandbox's PATH (supervised-shell.ts): the python3 found there is the one tasks run. */
const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Why repo-repair tasks cannot run here, or null: they need python3 with pytest on the system path. */
export function pytestUnavailableReason(): string | null {
  const r = spawnSync('python3', ['-c', 'import pytest'], {
    env: { PATH: SANDBOX_PATH },
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (r.error)
    return `python3 is not on the system path (${r.error.message}); install it with \`apt-get install -y python3-pytest\``;
  if (r.status !== 0)
    return 'the system python3 has no pytest; install it with `apt-get install -y python3-pytest` (as root)';
  return null;
}

/**
 * For tests that run repo-repair tasks: true when the system python3 has pytest. When it has not,
 * the tests skip with a loud message, unless CRL_REQUIRE_PYTEST=1 (CI sets it), which makes them fail.
 */
export function pytestAvailable(suite: string): boolean {
  const reason = pytestUnavailableReason();
  if (reason === null) return true;
  if (process.env.CRL_REQUIRE_PYTEST === '1') throw new Error(`${suite}: CRL_REQUIRE_PYTEST=1 but ${reason}`);
  process.stderr.write(`\n*** SKIPPED ${suite}: ${reason}. Set CRL_REQUIRE_PYTEST=1 to make this a failure. ***\n\n`);
  return false;
}
