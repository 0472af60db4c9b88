import type { SandboxBackend, SandboxSession, SandboxSpec } from '../../sandbox/backend.ts';
import type { SandboxLimitsInput } from '../../sandbox/limits.ts';
import { DEFAULT_SANDBOX_BACKEND, sandboxBackend } from '../../sandbox/registry.ts';
import { AgentFaultError, type CommandResult } from '../../sandbox/sandbox-types.ts';
import { bashQuote } from '../../sandbox/shell-script.ts';
import type { EnvCallOptions, Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { ACTION_HINT, parseShellAction, TOOLS_ACTION_HINT } from './action.ts';
import type { HarborTask } from './load-tasks.ts';
import { readVerifierFiles, verdictOf, type VerifierFiles } from './reward-file.ts';
import { checkTaskTree } from './task-files.ts';
import { taskImage, type TaskNetwork } from './task-image.ts';
import { newVerdictKey, testsWithKey } from './verdict-key.ts';

/**
 * One Harbor task as an Environment (docs/harbor.md). reset() starts a sandbox: on docker, a
 * container of the task's image (task-image.ts) in its WORKDIR; on bwrap, a workspace /app holding
 * the task's environment/ tree, after which environment/setup.sh runs; it returns instruction.md;
 * each step runs one command in the persistent shell (action.ts); `submit`, or the agent's time
 * running out ([agent] timeout_sec, summed over commands), runs tests/test.sh: every agent
 * process is killed and confirmed gone first, only then are /tests copied in (with a fresh key
 * for a task whose verdict is signed: verdict-key.ts) and /logs/verifier made anew, and the
 * verifier gets its own timeout; when it ends every process inside is killed and confirmed gone
 * again, and only then are the reward files read, once. The agent never sees tests/ or solution/
 * (solution/ only for the harbor-oracle policy). What the agent's own processes break (the
 * sandbox's control channel, the verifier's directories, the sweep), and whatever the code under
 * test does while the verifier runs (a broken or unsigned reward file, a crashed or timed-out
 * verifier), ends the episode as its failure with reward 0, never as an environment error
 * (docs/sandbox.md, "Whose fault").
 */
export interface HarborEnvOptions {
  task: HarborTask;
  /** Bind solution/ read-only at /solution (the harbor-oracle policy runs /solution/solve.sh). */
  exposeSolution?: boolean;
  /** Longest one command may run, seconds (never more than the agent's remaining time). Default 120. */
  commandTimeoutSec?: number;
  /** Output kept per command, bytes (docs/sandbox.md). Default 16384. */
  outputBytes?: number;
  /** Append the action format (action.ts ACTION_HINT) to the instruction. Default: true unless task.toml's [metadata] action_hint is false. */
  actionHint?: boolean;
  /** Further sandbox limits (memory comes from task.toml). */
  limits?: SandboxLimitsInput;
  /** The sandbox backend episodes run in (src/sandbox/registry.ts; default bubblewrap). */
  sandbox?: SandboxBackend;
}

export const WORKDIR = '/app';

export class HarborEnv implements Environment {
  readonly name: string;
  private sandbox: SandboxSession | null = null;
  private agentSeconds = 0;
  private network: TaskNetwork | null = null;
  private finished = false;

  constructor(private readonly options: HarborEnvOptions) {
    this.name = `harbor:${options.task.name}`;
  }

  /**
   * On docker, the container reset will take is started now (SandboxBackend.prepare), once the
   * task's image is there: the runtime asks this for the episodes after the running ones.
   */
  prepare(): void {
    const backend = this.backend();
    if (backend.name !== 'docker' || !backend.prepare || this.sandbox) return;
    void this.dockerSpec()
      .then(({ spec }) => backend.prepare!(spec))
      .catch(() => undefined); // reset says what failed
  }

  private backend(): SandboxBackend {
    return this.options.sandbox ?? sandboxBackend(DEFAULT_SANDBOX_BACKEND);
  }

  /** What every sandbox of this task has, whichever backend. */
  private commonSpec() {
    const cfg = this.options.task.config;
    return {
      env: cfg.environment.env,
      limits: {
        memoryMb: cfg.environment.memory_mb,
        ...(cfg.environment.storage_mb
          ? { fileSizeMb: cfg.environment.storage_mb, storageMb: cfg.environment.storage_mb }
          : {}),
        outputBytes: this.options.outputBytes ?? 16_384,
        ...this.options.limits,
      },
      emptyDirs: ['/logs/agent', '/logs/verifier'],
    };
  }

  private solutionSeed(): { from: string; to: string }[] {
    const { task } = this.options;
    return this.options.exposeSolution && task.solutionDir ? [{ from: task.solutionDir, to: '/solution' }] : [];
  }

  /** The docker sandbox's spec: the image holds the starting state (its Dockerfile copied what it needs), Harbor's way. */
  private async dockerSpec(): Promise<{ spec: SandboxSpec; network: TaskNetwork }> {
    const { task } = this.options;
    const cfg = task.config;
    const image = await taskImage(task);
    const spec: SandboxSpec = {
      image: image.image,
      workdir: image.workdir,
      network: image.network.given,
      cpus: cfg.environment.cpus,
      // /tests appears only when the verifier's files are uploaded, as in Harbor.
      dirs: [
        { path: '/logs', writable: true },
        ...(this.options.exposeSolution ? [{ path: '/solution', writable: false }] : []),
      ],
      ...this.commonSpec(),
      seed: this.solutionSeed(),
    };
    return { spec, network: image.network };
  }

  async reset(_seed: number, options: EnvCallOptions = {}): Promise<EnvReset> {
    if (this.sandbox) throw new Error(`internal: ${this.name} was reset twice`);
    const { task } = this.options;
    const cfg = task.config;
    // Checked again before they are copied: the folder may have changed since it was loaded.
    if (task.environmentDir) checkTaskTree(task.environmentDir);
    if (this.options.exposeSolution && task.solutionDir) checkTaskTree(task.solutionDir);
    const backend = this.backend();
    const common = this.commonSpec();
    const solution = this.solutionSeed();
    if (backend.name === 'docker') {
      const { spec, network } = await this.dockerSpec();
      this.network = network;
      this.sandbox = await backend.start(spec);
      return this.afterStart(options);
    }
    this.sandbox = await backend.start({
      dirs: [
        { path: WORKDIR, writable: true },
        { path: '/root', writable: true },
        { path: '/logs', writable: true },
        // A signed task's grader unlinks its key from /tests (verdict-key.ts).
        { path: '/tests', writable: signed(task) },
        ...(this.options.exposeSolution ? [{ path: '/solution', writable: false }] : []),
      ],
      workdir: WORKDIR,
      ...common,
      seed: [
        ...(task.environmentDir ? [{ from: task.environmentDir, to: WORKDIR, skip: task.environmentSkip }] : []),
        ...solution,
      ],
    });
    if (task.setupScript !== null) {
      const r = await this.sandbox.runFresh(task.setupScript, {
        timeoutMs: cfg.environment.build_timeout_sec * 1000,
        signal: options.signal,
        keepAgent: true,
      });
      if (r.exitCode !== 0) {
        throw new Error(
          `environment/setup.sh ${r.timedOut ? `timed out after ${cfg.environment.build_timeout_sec} s` : `exited with ${r.exitCode}`}: ${r.text.slice(-500)}`,
        );
      }
    }
    return this.afterStart(options);
  }

  private async afterStart(options: EnvCallOptions): Promise<EnvReset> {
    const { task } = this.options;
    const cfg = task.config;
    if (this.options.exposeSolution && Object.keys(cfg.solution.env).length > 0) {
      await this.sandbox!.run(exports(cfg.solution.env), { signal: options.signal });
    }
    // A task may opt out in task.toml ([metadata] action_hint = false) when its instruction says how to act.
    const hint = this.options.actionHint ?? cfg.metadata?.action_hint !== false;
    const format = options.agentFormat === 'tools' ? TOOLS_ACTION_HINT : ACTION_HINT;
    return { instruction: hint ? `${task.instruction.trim()}\n\n${format}` : task.instruction.trim() };
  }

  async step(text: string, options: EnvCallOptions = {}): Promise<EnvStep> {
    const sandbox = this.sandbox;
    if (!sandbox || this.finished) throw new Error(`internal: ${this.name} is not running`);
    const action = parseShellAction(text);
    if (action.kind === 'submit') return this.verify(options.signal, 'submitted');
    if (action.kind === 'empty') {
      return { observation: '[empty command: reply with a shell command, or submit]', done: false, reward: 0 };
    }
    const budget = this.options.task.config.agent.timeout_sec;
    const remaining = budget - this.agentSeconds;
    const limit = Math.min(this.options.commandTimeoutSec ?? 120, remaining);
    let r: CommandResult;
    try {
      r = await sandbox.run(action.command, { timeoutMs: limit * 1000, signal: options.signal });
    } catch (e) {
      if (e instanceof AgentFaultError) return this.agentFault(e);
      throw e;
    }
    this.agentSeconds += r.durationMs / 1000;
    const observation = describe(r, limit);
    if (this.agentSeconds >= budget) {
      const end = await this.verify(options.signal, `the agent's ${budget} s ran out`);
      return { ...end, observation: `${observation}\n${end.observation}` };
    }
    return { observation, done: false, reward: 0 };
  }

  async close(): Promise<void> {
    this.finished = true;
    await this.sandbox?.close();
  }

  /**
   * Puts tests/ in place (with a fresh key for a signed task), runs tests/test.sh in a fresh shell
   * with the verifier's timeout; when it ends everything inside is killed (runFresh), and only then
   * are the reward files read, once. Whatever the verifier's run leaves (no reward, a broken one,
   * an unsigned one, a timeout) is reward 0 with a note; only a sandbox that cannot be asked throws.
   */
  private async verify(signal: AbortSignal | undefined, why: string): Promise<EnvStep> {
    const sandbox = this.sandbox!;
    this.finished = true;
    const { task } = this.options;
    checkTaskTree(task.testsDir); // checked again: the folder may have changed since it was loaded
    const seconds = task.config.verifier.timeout_sec;
    const key = signed(task) ? newVerdictKey() : null;
    let r: CommandResult;
    try {
      // The ground is cleared before it is laid: nothing of the agent runs once /tests appears.
      await sandbox.clearAgent();
      const tests = key === null ? null : testsWithKey(task.testsDir, key);
      try {
        await sandbox.copyIn({ from: tests?.dir ?? task.testsDir, to: '/tests' });
      } finally {
        tests?.remove();
      }
      await sandbox.copyIn({ from: null, to: '/logs/verifier' }); // whatever the agent left there (links too) goes
      // As Harbor runs it: from the workdir, its output kept in /logs/verifier/test-stdout.txt.
      r = await sandbox.runFresh(
        `${exports(task.config.verifier.env)}bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1`,
        { timeoutMs: seconds * 1000, signal },
      );
    } catch (e) {
      if (e instanceof AgentFaultError) return this.agentFault(e);
      throw e;
    }
    let files: VerifierFiles;
    try {
      files = await readVerifierFiles(sandbox);
    } catch (e) {
      if (e instanceof AgentFaultError) return this.agentFault(e);
      throw e;
    }
    const reading = verdictOf(files, key);
    const notes = [
      r.timedOut ? `the verifier timed out after ${seconds} s` : null,
      reading.detail ?? null,
      reading.source === 'missing' || reading.source === 'invalid' ? `test.sh exit ${r.exitCode ?? 'none'}` : null,
      reading.source === 'missing' && this.network?.note ? this.network.note : null,
    ].filter((x): x is string => x !== null);
    return {
      observation: `[${why}; verifier reward ${reading.reward}${notes.length ? `: ${notes.join('; ')}` : ''}]`,
      done: true,
      reward: reading.reward,
    };
  }

  /** The agent's processes broke what the verifier needs: its failure, reward 0 (the class comment). */
  private agentFault(e: AgentFaultError): EnvStep {
    this.finished = true;
    return { observation: `[the episode ended: ${e.message}; reward 0]`, done: true, reward: 0 };
  }
}

/** task.toml's `[metadata] verdict = "signed"`: the reward counts only with the grader's signature. */
const signed = (task: HarborTask): boolean => task.config.metadata?.verdict === 'signed';

/** `export K=V; ...` for task-defined variables, quoted so values are never parsed. */
function exports(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `export ${k}=${bashQuote(v)}; `)
    .join('');
}

/** The observation for one command: its output, then its exit code and what happened to it. */
export function describe(r: CommandResult, limitSec: number): string {
  const tail: string[] = [];
  if (r.timedOut) tail.push(`[timed out after ${roundSec(limitSec)} s; the command was stopped]`);
  if (r.outputKilled) tail.push(`[the command printed more than allowed and was stopped]`);
  if (r.shellRestarted) tail.push('[the shell was restarted: working directory and variables are reset]');
  tail.push(`[exit ${r.exitCode ?? 'none'}]`);
  const out = r.text.length > 0 && !r.text.endsWith('\n') ? `${r.text}\n` : r.text;
  return out + tail.join('\n');
}

const roundSec = (s: number): string => (Number.isInteger(s) ? String(s) : s.toFixed(1));
