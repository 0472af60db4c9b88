import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * vitest's global setup (vitest.config.ts) for the per-file temporary roots of temp-root.ts. A file
 * whose tests are all skipped (a kernel test under CRL_NATIVE=0, a service that is absent) runs no
 * afterAll hook, so its root would stay: the suite names its roots `crl-test-<suite>-…` and removes
 * whatever of its own is left when the last file has ended. Other suites' roots (another checkout
 * testing on the same machine) carry another name and are left alone.
 */
export default function setup(): () => void {
  // Short: sockets of daemons that tests start live under these roots, and a Unix socket's path
  // is limited to 107 bytes. The pid is unique among live suites; mkdtemp adds the rest.
  const suite = process.pid.toString(36);
  process.env.CRL_TEST_SUITE = suite; // read by temp-root.ts in every test process
  const parent = tmpdir();
  const prefix = `crl-test-${suite}-`;
  return () => {
    for (const name of readdirSync(parent))
      if (name.startsWith(prefix)) rmSync(join(parent, name), { recursive: true, force: true, maxRetries: 10 });
  };
}
