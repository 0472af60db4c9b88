import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { SandboxMount } from './bwrap.ts';
import { hostPathOf, prepareBwrapLaunch } from './bwrap-launch.ts';
import { removeTree, untrackRoot } from './host-files.ts';
import type { SandboxLimits } from './limits.ts';
import { OutputCapture } from './output-capture.ts';
import { ReplyLines } from './reply-lines.ts';
import { parseShellState, shellStuck } from './shell-stuck.ts';
import { timeoutAfterPoll } from './timeout-after-poll.ts';
import { uptimeTicks } from './uptime-ticks.ts';
import { launchStdio, shellPipes, type SandboxLaunch, type SupervisorProcess } from './shell-pipes.ts';
import { AgentFaultError, SandboxError, type CommandResult, type SandboxOptions } from './sandbox-types.ts';
import { agentCommandLine, bashQuote, doneMarker, exitMarker } from './shell-script.ts';

/**
 * One sandbox: a persistent bash under the supervisor of shell-script.ts, driven over pipes. Two
 * launchers start it: Sandbox.start runs it in fresh namespaces with bwrap (bwrap.ts; five pipes),
 * Sandbox.connect takes one a container engine started, over its attached stdin and stderr
 * (docker-backend.ts, the supervisor muxed). Commands run one at a time in the same shell, so `cd` and
 * variables persist; each has a wall-time limit after which everything it started is killed; its
 * output is capped. close() kills every process inside (the pid namespace dies with its first
 * process) and deletes the host directories bwrap bound.
 *
 * Over 300 lines on purpose: the class is one state machine over one child process (the pipes, the
 * pending command's capture, the exit watcher), shared by both launchers; what needs none of that
 * state lives beside it (bwrap-launch.ts, shell-script.ts, output-capture.ts, reply-lines.ts,
 * host-files.ts), and splitting the rest would pass that private state between files.
 */

const START_TIMEOUT_MS = 15_000;

export class Sandbox {
  private readonly child: SupervisorProcess;
  /** The sandbox runs on this kernel (uptime-ticks.ts): a timed-out command's sweep names its start tick. */
  private readonly sharedClock: boolean;
  private readonly control: Writable;
  private readonly commands: Writable;
  private capture: { capture: OutputCapture; onHit: (code: number, marker: string) => void } | null = null;
  private early: Buffer[] = [];
  private readonly replies = new ReplyLines();
  private exited: string | null = null;
  private exitWaiters: (() => void)[] = [];
  private stderrText = '';
  private busy = false;
  private closed = false;
  /** The shell was replaced while no command ran (its loop was killed from inside). */
  private restartedBetween = false;
  /** Session nonce: the marker the shell loop prints when the agent's shell exits. */
  private readonly nonce: string;
  /** Why the control channel was found tampered with (the sandbox was then killed). */
  private tampered: string | null = null;

  private constructor(
    readonly root: string | null,
    private readonly mounts: readonly SandboxMount[],
    readonly limits: SandboxLimits,
    options: { launch: SandboxLaunch; nonce: string; sharedClock: boolean },
  ) {
    this.nonce = options.nonce;
    this.sharedClock = options.sharedClock;
    const { launch } = options;
    this.child =
      launch.started ?? spawn(launch.command, launch.args, { stdio: launchStdio(launch), ...(launch.ids ?? {}) });
    ({ control: this.control, commands: this.commands } = shellPipes(this.child, launch, {
      reply: (d) => this.replies.push(d),
      diagnostic: (text) => {
        if (this.stderrText.length < 4096) this.stderrText += text;
      },
    }));
    this.child.stdout!.on('data', (d: Buffer) => this.onOutput(d));
    this.child.on('error', (e) => this.onExit(`could not start ${launch.command}: ${e.message}`));
    this.child.on('exit', (code, signal) => this.onExit(signal ? `killed by ${signal}` : `exited with status ${code}`));
  }

  /**
   * A sandbox whose supervisor something else started (a container engine, docker-backend.ts):
   * `started` runs `bash -c script crl-sandbox nonce` inside, `script` being
   * `supervisorScript({ muxed: true, engineLimits: true, ... })`, with its stdin, stdout and
   * stderr attached. Resolves once its shell is ready.
   */
  static async connect(options: {
    limits: SandboxLimits;
    nonce: string;
    started: SupervisorProcess;
    startTimeoutMs?: number;
    /** The engine runs on this machine's kernel (a local socket): its clock is ours. */
    sharedClock?: boolean;
  }): Promise<Sandbox> {
    const launch = { command: 'the container engine', args: [], muxed: true, started: options.started };
    const sandbox = new Sandbox(null, [], options.limits, {
      launch,
      nonce: options.nonce,
      sharedClock: options.sharedClock ?? false,
    });
    try {
      await sandbox.awaitReady(options.startTimeoutMs ?? START_TIMEOUT_MS);
      return sandbox;
    } catch (e) {
      await sandbox.close();
      throw e;
    }
  }

  private async awaitReady(timeoutMs: number): Promise<void> {
    const ready = await this.replies.next(timeoutMs);
    if (ready !== `READY ${this.nonce}`) {
      throw new SandboxError(`the sandbox did not start: ${ready ?? 'no answer'}${this.diagnostics()}`);
    }
  }

  /** Starts a sandbox in fresh namespaces with bwrap (bwrap-launch.ts); resolves once its shell is ready. */
  static async start(options: SandboxOptions): Promise<Sandbox> {
    const prepared = await prepareBwrapLaunch(options);
    let sandbox: Sandbox | null = null;
    try {
      sandbox = new Sandbox(prepared.root, prepared.mounts, prepared.limits, { ...prepared, sharedClock: true });
      await sandbox.awaitReady(START_TIMEOUT_MS);
      return sandbox;
    } catch (e) {
      if (sandbox)
        await sandbox.close(); // removes the root too
      else {
        untrackRoot(prepared.root);
        removeTree(prepared.root);
      }
      throw e;
    }
  }

  /** Host path of a sandbox directory (to fill it, or to read results after a command). */
  hostPath(path: string): string {
    return hostPathOf(this.mounts, path);
  }

  /** Runs one command in the agent's persistent shell. */
  async run(command: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<CommandResult> {
    return this.exclusive(() =>
      this.execute({
        line: (nonce) => agentCommandLine(command, nonce),
        via: this.commands,
        timeoutMs: options.timeoutMs ?? this.limits.commandTimeoutSec * 1000,
        signal: options.signal,
        keepShell: true,
      }),
    );
  }

  /**
   * Kills every process the agent left (its shell included), then runs `command` in a fresh bash
   * in the workdir: nothing the agent defined (functions, aliases, variables, background
   * processes) can stand in for the verifier; when it ends (or times out) every process inside
   * is killed again and confirmed gone, so nothing it started outlives it. With `keepAgent` (a
   * setup script before the agent starts) nothing is killed before or after; a timeout still
   * kills everything inside.
   */
  async runFresh(
    command: string,
    options: { timeoutMs: number; signal?: AbortSignal; keepAgent?: boolean },
  ): Promise<CommandResult> {
    return this.exclusive(async () => {
      if (!options.keepAgent) await this.killAgent('before the verifier');
      const r = await this.execute({
        // VS: the supervisor kills everything the moment the verifier exits (shell-script.ts).
        line: (nonce) => `${options.keepAgent ? 'V' : 'VS'} ${nonce} ${bashQuote(command)}\n`,
        via: this.control,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        keepShell: false,
      });
      // A verifier leaves nothing behind: what it started (the code under test included) could
      // otherwise write its result after it ended. A setup script's servers stay for the agent.
      if (!options.keepAgent) await this.killAgent('after the verifier');
      return r;
    });
  }

  /**
   * Kills every process the agent left, for good, and confirms none is left running (the
   * supervisor takes no agent command afterwards). Throws AgentFaultError when processes outlive
   * every pass or the reply is not the one asked for.
   */
  async clearAgent(): Promise<void> {
    await this.exclusive(() => this.killAgent('before the verifier'));
  }

  /** KA: everything but the supervisor killed and confirmed gone; `when` names the moment in the error. */
  private async killAgent(when = 'before the verifier'): Promise<void> {
    // A sweep of a full process table on a busy machine takes a while: more than a timeout kill's.
    const reply = await this.sendControl('KA', '', ['SWEPT', 'ALIVE'], 120_000);
    if (reply.startsWith('ALIVE')) {
      throw new AgentFaultError(`${reply.split(' ')[2]} processes in the sandbox outlived every kill ${when}`);
    }
  }

  /** Kills everything inside and deletes the host directories. Safe to call more than once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.exited === null) {
      this.child.kill('SIGKILL'); // bwrap's init has --die-with-parent: the whole pid namespace goes
      await new Promise<void>((resolve) => (this.exited !== null ? resolve() : this.exitWaiters.push(resolve)));
    }
    for (const s of this.child.stdio) (s as Readable | Writable | null)?.destroy();
    if (this.root !== null) {
      untrackRoot(this.root);
      removeTree(this.root);
    }
  }

  /** The host pid of bwrap (tests count what runs inside its namespaces). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  private async exclusive<T>(f: () => Promise<T>): Promise<T> {
    if (this.closed) throw new SandboxError('the sandbox is closed');
    if (this.busy) throw new Error('internal: one command at a time per sandbox');
    this.busy = true;
    try {
      return await f();
    } finally {
      this.busy = false;
    }
  }

  private async execute(options: {
    line: (nonce: string) => string;
    via: Writable;
    timeoutMs: number;
    signal: AbortSignal | undefined;
    keepShell: boolean;
  }): Promise<CommandResult> {
    if (this.exited !== null) throw this.lostError();
    const nonce = randomBytes(8).toString('hex');
    const markers = [doneMarker(nonce), exitMarker(this.nonce)];
    const capture = new OutputCapture(this.limits.outputBytes, markers);
    const started = Date.now();
    const startTick = this.sharedClock ? uptimeTicks() : 0;
    let timedOut = false;
    let outputKilled = false;
    let shellRestarted = false;
    const outcome = new Promise<{ code: number | null; marker: string | null }>((resolve, reject) => {
      const finish = (code: number | null, marker: string | null): void => {
        this.capture = null;
        cleanup();
        resolve({ code, marker });
      };
      this.capture = { capture, onHit: (code, marker) => finish(code, marker) };
      const onExit = (): void => {
        this.capture = null;
        cleanup();
        reject(this.lostError());
      };
      this.exitWaiters.push(onExit);
      const kill = async (why: 'timeout' | 'output'): Promise<void> => {
        if (why === 'timeout') timedOut = true;
        else outputKilled = true;
        // Everything started since the command began (not the shell, not older background jobs).
        // On a shared clock the start tick itself (the supervisor may read this late); else how long ago.
        const elapsedCs = Math.ceil((Date.now() - started) / 10) + 1;
        const sweep = () =>
          this.sharedClock
            ? this.sendControl('KT', String(Math.max(1, startTick - 1)), ['SWEPT'])
            : this.sendControl('K', String(elapsedCs), ['SWEPT']);
        await (options.keepShell ? sweep() : this.killAgent()).catch(() => undefined);
        if (!options.keepShell) return finish(null, null);
        // A builtin loop runs in the shell itself and never prints the marker: then the shell has to go.
        const waiting = () => this.capture?.capture === capture;
        const probe = async () => parseShellState(await this.sendControl('P', '', ['SHELL']));
        if ((await shellStuck(probe, waiting).catch(() => true)) && waiting()) {
          shellRestarted = true;
          await this.sendControl('R', '', ['RESTARTED']).catch(() => undefined);
        }
      };
      // A reply read in the last poll (after a pause of this process) is not a timeout.
      const timer = timeoutAfterPoll(
        () => this.capture?.capture === capture && void kill('timeout'),
        options.timeoutMs,
      );
      const checkBytes = setInterval(() => {
        const cap = this.limits.outputKillBytes;
        if (cap !== undefined && capture.bytes > cap && !timedOut && !outputKilled) void kill('output');
      }, 50);
      const onAbort = (): void => {
        this.capture = null;
        cleanup();
        reject(new SandboxError('the command was cancelled'));
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => {
        clearTimeout(timer);
        clearInterval(checkBytes);
        options.signal?.removeEventListener('abort', onAbort);
        this.exitWaiters = this.exitWaiters.filter((w) => w !== onExit);
      };
    });
    // Output that arrived between commands (background jobs) belongs to this observation.
    const early = this.early;
    this.early = [];
    for (const b of early) this.onOutput(b);
    options.via.write(options.line(nonce));
    const { code, marker } = await outcome;
    const restarted = marker === exitMarker(this.nonce) || this.restartedBetween;
    this.restartedBetween = false;
    return {
      ...capture.result(),
      exitCode: code,
      timedOut,
      outputKilled,
      shellRestarted: shellRestarted || restarted,
      durationMs: Date.now() - started,
    };
  }

  private onOutput(d: Buffer): void {
    const current = this.capture;
    if (!current) {
      // Between commands: note a shell restart, and keep a bounded amount for the next observation.
      const text = d.toString('latin1');
      const marker = new RegExp(`\\n${exitMarker(this.nonce)}\\d+__\\n`, 'g');
      if (marker.test(text)) {
        this.restartedBetween = true;
        d = Buffer.from(text.replace(marker, ''), 'latin1');
      }
      const held = this.early.reduce((a, b) => a + b.length, 0);
      if (held < this.limits.outputBytes) this.early.push(d.subarray(0, this.limits.outputBytes - held));
      return;
    }
    const hit = current.capture.push(d);
    if (hit) {
      current.onHit(hit.code, hit.marker);
      if (hit.rest.length > 0) this.onOutput(hit.rest);
    }
  }

  /**
   * Sends a control line with a fresh request id and waits for its one-line reply, which must
   * repeat the id under one of the `expected` words (shell-script.ts). Anything else on the reply
   * channel (a line nobody asked for, a wrong id, BAD) can only come from inside the sandbox: the
   * channel is taken as tampered with, the sandbox is ended and AgentFaultError thrown.
   */
  private async sendControl(
    op: string,
    args: string,
    expected: readonly string[],
    timeoutMs = 10_000,
  ): Promise<string> {
    if (this.exited !== null) throw this.lostError();
    const id = randomBytes(8).toString('hex');
    this.control.write(`${op} ${id}${args ? ` ${args}` : ''}\n`);
    const reply = await this.replies.next(timeoutMs);
    if (reply === null) {
      if (this.exited !== null) throw this.lostError();
      throw new SandboxError(`the sandbox did not answer ${op} in ${timeoutMs / 1000} s${this.diagnostics()}`);
    }
    const [word, rid] = reply.split(' ');
    if (rid !== id || !expected.includes(word!)) {
      this.tampered = `the sandbox's control channel was tampered with (asked ${op} ${id}, got ${JSON.stringify(reply.slice(0, 80))})`;
      this.child.kill('SIGKILL');
      throw new AgentFaultError(this.tampered);
    }
    return reply;
  }

  private onExit(why: string): void {
    if (this.exited !== null) return;
    this.exited = why;
    this.replies.close();
    for (const w of this.exitWaiters.splice(0)) w();
  }

  private lostError(): SandboxError {
    if (this.tampered !== null) return new AgentFaultError(this.tampered);
    return new SandboxError(`the sandbox ended (${this.exited ?? 'unknown'})${this.diagnostics()}`);
  }

  private diagnostics(): string {
    const s = this.stderrText.trim();
    return s ? `: ${s.slice(0, 500)}` : '';
  }
}
