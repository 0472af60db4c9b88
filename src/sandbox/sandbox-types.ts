import type { SandboxLimitsInput } from './limits.ts';
import type { CapturedOutput } from './output-capture.ts';
import type { FaultKind } from '../contracts/index.ts';

/** What a sandbox is asked for and answers (sandbox.ts), and how it fails. */

/** Sandboxes cannot run on this machine (bwrap missing or namespaces refused): the message says why. */
export class SandboxUnavailableError extends Error {
  /** Not the agent's doing: an episode that meets it is a fault, left out of training (docs/faults.md). */
  readonly faultKind: FaultKind = 'sandbox';
  constructor(reason: string) {
    super(reason);
    this.name = 'SandboxUnavailableError';
  }
}

/** The sandbox broke (failed to start, its supervisor died): the episode cannot go on. */
export class SandboxError extends Error {
  /** Not the agent's doing: an episode that meets it is a fault, left out of training (docs/faults.md). */
  readonly faultKind: FaultKind = 'sandbox';
  constructor(message: string) {
    super(message);
    this.name = 'SandboxError';
  }
}

/**
 * The agent's own processes ended the episode: they tampered with the supervisor's control
 * channel, outlived every kill before the verifier, or left files the verifier's directories
 * could not be made over. Only what runs inside the sandbox can cause these, so they are the
 * agent's failure (reward 0), never an environment error (docs/sandbox.md, "Whose fault").
 */
export class AgentFaultError extends SandboxError {
  constructor(message: string) {
    super(message);
    this.name = 'AgentFaultError';
  }
}

export interface SandboxDir {
  /** Absolute path inside the sandbox, e.g. '/app'. A fresh empty host directory is bound there. */
  path: string;
  writable: boolean;
}

export interface SandboxOptions {
  /** Directories bound from the host (each a new directory under the sandbox's host root). */
  dirs: readonly SandboxDir[];
  /** The working directory (one of dirs, writable): where the shell starts and the verifier runs. */
  workdir: string;
  limits?: SandboxLimitsInput;
  /** Extra environment variables (PATH, HOME, LANG, TERM have defaults). */
  env?: Readonly<Record<string, string>>;
  /** Fills the host directories before the sandbox starts (e.g. copies the task's files). */
  prepare?: (hostDir: (path: string) => string) => void | Promise<void>;
  /**
   * Host directory under which the sandbox's own directory (TEMP_PREFIX...) is made and, at
   * close(), deleted. Default os.tmpdir(). When running as root it must be searchable by the
   * sandbox's user (mode 0711 or wider).
   */
  tempRoot?: string;
}

export interface CommandResult extends CapturedOutput {
  /** The command's exit status (128 + signal when killed); null when the shell itself was lost. */
  exitCode: number | null;
  timedOut: boolean;
  /** Killed for printing more than outputKillBytes. */
  outputKilled: boolean;
  /** The shell exited or was killed and a fresh one started: working directory and variables are reset. */
  shellRestarted: boolean;
  durationMs: number;
}
