/**
 * The environment contract: a task instance speaks text, one episode at a time. The rollout
 * runtime (src/rollout) owns tokens; environments never see them (docs/rollout.md).
 */

/** What a task gives at the start of an episode. */
export interface EnvReset {
  /** The user instruction u (method §2). */
  instruction: string;
}

/** What a task gives after each action. */
export interface EnvStep {
  observation: string;
  done: boolean;
  /** The verified outcome; only meaningful when done (1 pass, 0 fail unless graded). */
  reward: number;
}

/** Per-call options the runtime passes to an environment. */
export interface EnvCallOptions {
  /**
   * Aborted when the runtime gives up on this call (its timeout passed, or the whole run was
   * cancelled). An environment that does real work (a sandbox) stops it; the runtime then closes it.
   */
  signal?: AbortSignal;
  /**
   * How the agent acts (docs/agent-format.md), given at reset: an environment whose instruction
   * explains the action format (task folders) explains the one in use.
   */
  agentFormat?: 'text' | 'tools';
}

/**
 * A task instance: text in, text out; one episode at a time per instance. The runtime awaits
 * every call, so reset/step may return promises (a sandboxed shell does) or answer at once (the
 * in-process text games do; they need no close). The runtime calls close() once, when the episode
 * ends for any reason, and never calls the instance again afterwards.
 */
export interface Environment {
  /** Registered family name, e.g. 'kv-ledger'. */
  readonly name: string;
  reset(seed: number, options?: EnvCallOptions): EnvReset | Promise<EnvReset>;
  step(action: string, options?: EnvCallOptions): EnvStep | Promise<EnvStep>;
  /**
   * A hint that reset comes soon (the runtime gives it for the episodes after the running ones):
   * the instance may start what reset will need ahead (a container). Returns at once, never
   * throws; what fails shows in reset.
   */
  prepare?(): void;
  /** Releases everything the instance holds (processes, files); must not throw for a healthy instance. */
  close?(): void | Promise<void>;
}
