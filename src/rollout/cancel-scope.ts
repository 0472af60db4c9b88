/**
 * Cancels many short-lived calls from one cause without adding a listener per call to a shared
 * AbortSignal. A run has hundreds of environment calls in flight over its life and dozens at once;
 * each gets its own signal from `enter()`, dropped from the scope by `release()` when the call ends,
 * so nothing accumulates (Node warns at 11 listeners on one signal, and listeners never removed
 * would keep every finished call alive until the run ends).
 */
export class CancelScope {
  private readonly live = new Set<AbortController>();
  private why: Error | null = null;

  /** Why the scope was cancelled, or null while it runs. */
  get reason(): Error | null {
    return this.why;
  }

  /** A signal for one call, aborted when the scope is cancelled; call release() once the call ended. */
  enter(): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    if (this.why) controller.abort(this.why);
    else this.live.add(controller);
    return { signal: controller.signal, release: () => this.live.delete(controller) };
  }

  /** Aborts every call in flight, and every later one at once. Only the first reason counts. */
  cancel(reason: Error): void {
    if (this.why) return;
    this.why = reason;
    for (const c of this.live) c.abort(reason);
    this.live.clear();
  }

  /** Calls entered and not yet released (tests check that none are left). */
  get inFlight(): number {
    return this.live.size;
  }
}
