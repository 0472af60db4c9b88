import { dockerUnavailableReason } from '../docker-cli.ts';
import { removeRun, runOf, sweepDeadRuns } from '../docker-run-scope.ts';
import { ownerTag } from '../stale-dirs.ts';

/**
 * vitest's global setup (vitest.config.ts): labels every container and image the suite's tests
 * make with this suite's run (docker-run-scope.ts), removes those of killed suites before the
 * first test, and this suite's own after the last. When CRL_DOCKER_RUN is already set (.ci/run
 * sets it for both of its passes, so the second reuses the first's images) the one who set it
 * removes them. Without a daemon it does nothing.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (dockerUnavailableReason() !== null) return undefined;
  const own = process.env.CRL_DOCKER_RUN ? null : runOf(ownerTag());
  if (own !== null) process.env.CRL_DOCKER_RUN = own;
  const swept = await sweepDeadRuns();
  if (swept.containers.length + swept.images.length > 0) {
    process.stderr.write(
      `docker: removed ${swept.containers.length} containers and ${swept.images.length} images of killed test runs\n`,
    );
  }
  return async () => {
    if (own !== null) await removeRun(own);
  };
}
