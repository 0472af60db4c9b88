/**
 * Optional per-kernel wall-clock accounting for the benchmark. Call sites do
 * `t = prof ? prof.lap('name', t) : 0` so the cost when disabled is one branch.
 */
export class Profiler {
  readonly totals = new Map<string, number>(); // ms per kernel name

  now(): number {
    return performance.now();
  }

  /** Charges the time since t0 to name; returns the current time for the next lap. */
  lap(name: string, t0: number): number {
    const t = performance.now();
    this.totals.set(name, (this.totals.get(name) ?? 0) + (t - t0));
    return t;
  }

  reset(): void {
    this.totals.clear();
  }
}
