import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A setup file (vitest.config.ts) run before every test file: the file gets a temporary root of
 * its own, made the process's TMPDIR, so whatever it and the processes it spawns (`crl`, Redis,
 * sandboxes) create with os.tmpdir() lands there; the root is removed when the file ends, after the
 * file's own afterAll hooks (hooks run in reverse order, and this one is registered first) have
 * stopped what they started. A test that forgets to remove a directory leaves nothing behind, and
 * a test that writes outside TMPDIR is found by .ci/check-machine.
 */
const parent = tmpdir();
// Named by the suite (temp-root-global.ts), which removes a root a fully skipped file leaves.
const root = mkdtempSync(join(parent, `crl-test-${process.env.CRL_TEST_SUITE ?? 'solo'}-`));
// Searchable by others, as the system's temporary directory is: a sandbox run as root drops to a
// user of its own that must reach its directory under here (sandbox-types.ts, tempRoot).
chmodSync(root, 0o711);
// tsx keeps its compile cache in TMPDIR/tsx-<uid>: every `crl` a test spawns would otherwise compile
// the whole tree again. The link keeps the one cache every file and run shares.
const tsxCache = `tsx-${process.getuid?.() ?? 0}`;
mkdirSync(join(parent, tsxCache), { recursive: true, mode: 0o700 });
symlinkSync(join(parent, tsxCache), join(root, tsxCache));
process.env.TMPDIR = root;

afterAll(() => {
  process.env.TMPDIR = parent;
  // Retries: a child process stopped by the file's own hooks may still be closing files here.
  rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});
