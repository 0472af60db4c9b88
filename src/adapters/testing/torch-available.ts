import { spawnSync } from 'node:child_process';
import { DEFAULT_TORCH_COMMAND } from '../torch/trainer-target.ts';

/**
 * For tests that need the PyTorch trainer: true when the trainer's python imports torch. When it
 * does not, the tests skip with a loud message, unless CRL_REQUIRE_TORCH=1 (CI sets it), which
 * makes them fail.
 */
export function torchAvailable(suite: string): boolean {
  const python = DEFAULT_TORCH_COMMAND[0]!;
  const r = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8', timeout: 120_000 });
  const reason =
    r.error !== undefined
      ? `${python} cannot run: ${r.error.message}`
      : r.status !== 0
        ? `${python} cannot import torch: ${(r.stderr ?? '').trim().split('\n').pop() ?? ''}`
        : null;
  if (reason === null) return true;
  if (process.env.CRL_REQUIRE_TORCH === '1') {
    throw new Error(`${suite}: CRL_REQUIRE_TORCH=1 but the torch trainer cannot run: ${reason}`);
  }
  process.stderr.write(
    `\n*** SKIPPED ${suite}: the torch trainer cannot run here (${reason}). ` +
      'Install torch for that python (Debian: apt-get install python3-torch); set CRL_REQUIRE_TORCH=1 to make this a failure. ***\n\n',
  );
  return false;
}
