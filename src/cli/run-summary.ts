import type { FaultKind } from '../contracts/index.ts';
import { countFaults, describeFault, faultKind, isFault } from '../rollout/faults.ts';
import { isSuccess, type EpisodeRecord } from '../rollout/record.ts';

/** The last line `crl run` prints; scripts parse it, so its fields are a contract. */
export interface RunSummary {
  passAt1: number;
  episodes: number;
  meanCompactions: number;
  meanGeneratedTokens: number;
  truncated: number;
  /**
   * Episodes that ended in a fault (outcome 'env-error': a sandbox, verifier, engine or
   * environment failure, not the agent's); counted as failures in passAt1, and by kind in
   * `faults`. A warning on stderr names the first reason (docs/faults.md).
   */
  envErrors: number;
  faults: Record<FaultKind, number>;
}

/**
 * The summary, accumulated as records arrive, so a run of any length holds no record in memory.
 * `firstEnvError` is the first env-error's reason (for the warning).
 */
export class RunTally {
  private n = 0;
  private passed = 0;
  private compactions = 0;
  private generated = 0;
  private truncated = 0;
  private envErrors = 0;
  private faults = countFaults([]);
  firstEnvError: string | null = null;

  add(r: EpisodeRecord): void {
    this.n++;
    if (isSuccess(r.reward)) this.passed++;
    this.compactions += r.compactions;
    this.generated += r.generatedTokens;
    if (r.outcome === 'truncated') this.truncated++;
    if (isFault(r)) {
      this.envErrors++;
      this.faults[faultKind(r)]++;
      this.firstEnvError ??= describeFault(r);
    }
  }

  get passes(): number {
    return this.passed;
  }

  summary(): RunSummary {
    const mean = (x: number) => (this.n === 0 ? 0 : x / this.n);
    return {
      passAt1: mean(this.passed),
      episodes: this.n,
      meanCompactions: mean(this.compactions),
      meanGeneratedTokens: mean(this.generated),
      truncated: this.truncated,
      envErrors: this.envErrors,
      faults: { ...this.faults },
    };
  }
}

export function summarizeRecords(records: readonly EpisodeRecord[]): RunSummary {
  const tally = new RunTally();
  for (const r of records) tally.add(r);
  return tally.summary();
}
