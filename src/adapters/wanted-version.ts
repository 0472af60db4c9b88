/**
 * Which weights may answer a request (SGLang's weight_version, as `crl serve` reports it): exactly
 * one version (a synchronous trainer: every episode of iteration k samples the weights after
 * k - 1 updates), or any version at least as new as a floor (a rollout worker of an asynchronous
 * trainer: the trainer pushes newer weights while its jobs wait, docs/async.md, and newer is
 * never staler). Versions count updates, so "newer" compares them as integers.
 */
export type WantedVersion = { exact: string } | { atLeast: number };

/** The integer a version string names, or null when it names none (an engine's own label). */
export function versionNumber(served: string | null | undefined): number | null {
  return served != null && /^\d+$/.test(served) ? Number(served) : null;
}

/** Whether weights labelled `served` may answer a request that wants `want`. */
export function acceptsVersion(want: WantedVersion, served: string | null | undefined): boolean {
  if ('exact' in want) return served === want.exact;
  const n = versionNumber(served);
  return n !== null && n >= want.atLeast;
}

/** `weight version 3` or `weight version 3 or newer`, for error messages. */
export function describeWanted(want: WantedVersion): string {
  return 'exact' in want ? `weight version ${want.exact}` : `weight version ${want.atLeast} or newer`;
}
