/**
 * Whose fault an episode's end was (docs/faults.md). An environment that fails for a reason
 * outside the agent's reach throws an error carrying one of these kinds (a `faultKind` field);
 * the rollout runtime records it, and training leaves the episode out of the update.
 *
 * - 'sandbox': the sandbox could not be started, asked or kept (a killed container, a daemon
 *   that did not answer, a supervisor that died);
 * - 'verifier': the verifier ran but the sandbox could not be asked for its reward (a reward file
 *   that makes no sense is the agent's failure: its code ran with the verifier);
 * - 'engine': the sampling engine failed for this episode;
 * - 'environment': anything else the environment threw, or a call that missed its deadline.
 */
export const FAULT_KINDS = ['sandbox', 'verifier', 'engine', 'environment'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The kind an error names in its `faultKind` field, else 'environment'. */
export function faultKindOf(error: unknown): FaultKind {
  const kind = (error as { faultKind?: unknown } | null)?.faultKind;
  return FAULT_KINDS.find((k) => k === kind) ?? 'environment';
}
