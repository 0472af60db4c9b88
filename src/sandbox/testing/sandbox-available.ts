import { sandboxUnavailableReason } from '../bwrap.ts';

/**
 * For tests that need real sandboxes: true when bwrap works here. When it does not, the tests
 * skip with a loud message, unless CRL_REQUIRE_SANDBOX=1 (CI sets it), which makes them fail.
 */
export function sandboxAvailable(suite: string): boolean {
  const reason = sandboxUnavailableReason();
  if (reason === null) return true;
  if (process.env.CRL_REQUIRE_SANDBOX === '1') {
    throw new Error(`${suite}: CRL_REQUIRE_SANDBOX=1 but sandboxes cannot run: ${reason}`);
  }
  process.stderr.write(
    `\n*** SKIPPED ${suite}: sandboxes cannot run here (${reason}). ` +
      'These tests check the sandbox against escapes; set CRL_REQUIRE_SANDBOX=1 to make this a failure. ***\n\n',
  );
  return false;
}
