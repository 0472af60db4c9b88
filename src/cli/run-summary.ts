import { isSuccess, type EpisodeRecord } from '../rollout/record.ts';

/** The last line `crl run` prints; scripts parse it, so its fields are a contract. */
export interface RunSummary {
  passAt1: number;
  episodes: number;
  meanCompactions: number;
  meanGeneratedTokens: number;
  truncated: number;
  /** Episodes whose environment failed (outcome 'env-error'); a warning on stderr names the first reason. */
  envErrors: number;
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
  firstEnvError: string | null = null;

  add(r: EpisodeRecord): void {
    this.n++;
    if (isSuccess(r.reward)) this.passed++;
    this.compactions += r.compactions;
    this.generated += r.generatedTokens;
    if (r.outcome === 'truncated') this.truncated++;
    if (r.outcome === 'env-error') {
      this.envErrors++;
      if (this.firstEnvError === null) {
        const ev = r.events.find((e) => e.kind === 'env-error');
        this.firstEnvError = `${r.episodeId}: ${ev && 'message' in ev ? ev.message : 'no reason recorded'}`;
      }
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
    };
  }
}

export function summarizeRecords(records: readonly EpisodeRecord[]): RunSummary {
  const tally = new RunTally();
  for (const r of records) tally.add(r);
  return tally.summary();
}
