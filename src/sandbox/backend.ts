import type { SandboxLimitsInput } from './limits.ts';
import type { CommandResult, SandboxDir } from './sandbox-types.ts';

/**
 * The sandbox layer's contract (docs/sandbox.md): environments that run commands (Harbor task
 * folders, shell-ledger) speak to a SandboxBackend and the SandboxSessions it starts, never to
 * a concrete sandbox. bubblewrap (bwrap-backend.ts) is the first backend; a container engine is
 * another. Every path here is a path inside the sandbox.
 */

/** A host tree copied to a sandbox directory before the shell starts. */
export interface SandboxSeed {
  /** Host directory whose contents are copied (links copied as links, never followed). */
  from: string;
  /** One of the spec's dirs, or a directory below one. */
  to: string;
  /** Entries of `from` (relative names) left out. */
  skip?: readonly string[];
}

export interface SandboxSpec {
  /** Directories the sandbox has (each starts empty, then seeded). */
  dirs: readonly SandboxDir[];
  /** The working directory (one of dirs, writable): where the shell starts and the verifier runs. */
  workdir: string;
  limits?: SandboxLimitsInput;
  /** Extra environment variables (PATH, HOME, LANG, TERM have defaults). */
  env?: Readonly<Record<string, string>>;
  /** Host trees copied in before the shell starts. */
  seed?: readonly SandboxSeed[];
  /** Empty directories made (below dirs) before the shell starts, e.g. '/logs/verifier'. */
  emptyDirs?: readonly string[];
  /**
   * A container image whose file system the sandbox starts from (backends with images: docker).
   * Its directories named in `dirs` are made if absent and keep what the image put there.
   */
  image?: string;
  /** Container network (docker: 'none' unless given, e.g. 'bridge' for a task that allows internet). */
  network?: string;
  /** CPUs the sandbox may use (docker: a CFS quota). */
  cpus?: number;
}

export interface RunOptions {
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

/** One running sandbox: a persistent shell and its directories. */
export interface SandboxSession {
  /** Runs one command in the agent's persistent shell (`cd` and variables persist). */
  run(command: string, options?: RunOptions): Promise<CommandResult>;
  /**
   * Kills every process the agent left (its shell included), then runs `command` in a fresh shell
   * in the workdir: nothing the agent defined can stand in for a verifier. When the command ends
   * or times out, every process in the sandbox is killed and confirmed gone before this resolves,
   * so nothing it started (the code it tests included) can write afterwards: files read next are
   * final. AgentFaultError when processes outlive every kill. With `keepAgent` (a setup script
   * before the agent starts) nothing is killed before or after.
   */
  runFresh(command: string, options: RunOptions & { timeoutMs: number; keepAgent?: boolean }): Promise<CommandResult>;
  /**
   * Kills every process the agent started, its shell included, and confirms none is left
   * running; afterwards nothing of the agent runs and no agent command is taken. Called before
   * anything of the verifier enters the sandbox. Throws AgentFaultError (sandbox-types.ts) when
   * the agent's processes prevent it: they outlived every kill, or answered for the supervisor.
   */
  clearAgent(): Promise<void>;
  /**
   * Replaces the sandbox directory `to` (or a directory below one) with a copy of the host tree
   * `from` (empty when `from` is null), owned by the sandbox's user. Whatever the agent left at
   * `to` (files, links) is removed first, never followed; AgentFaultError when it cannot be.
   */
  copyIn(options: { from: string | null; to: string }): Promise<void>;
  /**
   * A regular file's bytes, or null when it is absent, not a regular file (a link included, or
   * under a linked directory) or over maxBytes. Files the agent could write are read this way.
   * Rejects with a SandboxError when the sandbox could not be asked (its container is gone, the
   * daemon did not answer): "the file is not there" and "nobody could look" are different answers.
   */
  readFile(path: string, options: { maxBytes: number }): Promise<Buffer | null>;
  /** Kills everything inside and removes the sandbox's files. Safe to call more than once. */
  close(): Promise<void>;
}

export interface SandboxBackend {
  /** Registered name, e.g. 'bwrap'. */
  readonly name: string;
  /** Why no sandbox can start on this machine, or null when one can. */
  unavailableReason(): string | null;
  /** Starts a sandbox; resolves once its shell is ready. Throws SandboxUnavailableError when it cannot run here. */
  start(spec: SandboxSpec): Promise<SandboxSession>;
  /**
   * A hint that a sandbox of this spec will be started soon (the spec's seeds are not read yet):
   * a backend may start what it can ahead (docker starts a container). Returns at once, never
   * throws; what fails shows in the start that follows.
   */
  prepare?(spec: SandboxSpec): void;
}
