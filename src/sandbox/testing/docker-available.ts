import { dockerUnavailableReason } from '../docker-cli.ts';
import { spawnSync } from 'node:child_process';
import { imagePresentSync } from '../docker-images.ts';

/** The base image the tests' own Dockerfiles start FROM, built offline by scripts/docker-setup.sh. */
export const TEST_BASE_IMAGE = 'crl-test/debian:bookworm';

/**
 * For tests that need a real Docker daemon and the test base image: true when both are there.
 * Otherwise the tests skip with a loud message, unless CRL_REQUIRE_DOCKER=1 (.ci/run sets it,
 * after scripts/docker-setup.sh), which makes them fail.
 */
export function dockerAvailable(suite: string, options: { basePackages?: readonly string[] } = {}): boolean {
  let reason = dockerUnavailableReason();
  if (reason === null && !imagePresentSync(TEST_BASE_IMAGE)) {
    reason = `the test base image ${TEST_BASE_IMAGE} is missing (scripts/docker-setup.sh builds it)`;
  }
  const lacking = reason === null ? (options.basePackages ?? []).filter((p) => !basePackages().includes(p)) : [];
  if (lacking.length > 0) {
    reason = `the test base image ${TEST_BASE_IMAGE} lacks ${lacking.join(', ')} (it predates them: scripts/docker-setup.sh rebuilds it)`;
  }
  if (reason === null) return true;
  if (process.env.CRL_REQUIRE_DOCKER === '1') {
    throw new Error(`${suite}: CRL_REQUIRE_DOCKER=1 but Docker cannot run here: ${reason}`);
  }
  process.stderr.write(
    `\n*** SKIPPED ${suite}: Docker cannot run here (${reason}). ` +
      'Run scripts/docker-setup.sh (as root), or set CRL_REQUIRE_DOCKER=1 to make this a failure. ***\n\n',
  );
  return false;
}

/** The Debian packages scripts/docker-setup.sh put in the test base image (its crl.packages label). */
function basePackages(): string[] {
  const r = spawnSync(
    'docker',
    ['image', 'inspect', '--format', '{{index .Config.Labels "crl.packages"}}', TEST_BASE_IMAGE],
    {
      encoding: 'utf8',
    },
  );
  return r.status === 0 ? r.stdout.trim().split(',') : [];
}
