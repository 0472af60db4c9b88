import { placeTurnRecord, readActionTurn, readSummaryTurn } from './agent-format/tool-turns.ts';
import {
  afterAction,
  encodeObservationTurn,
  encodeTaskTurn,
  maxResumeTurnLength,
  type ChatLayout,
} from './chat-layout.ts';
import type { RolloutConfig } from './config.ts';
import {
  isSuccess,
  type EnvErrorEvent,
  type EpisodeEvent,
  type EpisodeRecord,
  type Outcome,
  type Segment,
  type TurnRecord,
} from './record.ts';
import type { Environment, EnvReset, EnvStep, SampleRequest, SampleResult } from '../contracts/index.ts';
import { compactWindow } from './compaction.ts';
import { ContextWindow, rewriteLastStep } from './window.ts';
import { checkResult, failDone, failNoRequest, InstructionTooLongError } from './episode-errors.ts';

/** One episode to run: a fresh environment instance and the task seed for its reset. */
export interface EpisodeSpec {
  episodeId: string;
  env: Environment;
  seed: number;
}

/**
 * 'act' and 'summarize' wait for the sampler; 'env' waits for the environment's answer to the
 * action just taken (the runner calls env.step(pendingAction) and hands the answer to observe()).
 */
export type EpisodePhase = 'act' | 'summarize' | 'env' | 'done';

/**
 * The per-episode state machine of method §2, free of I/O: the runner resets the environment and
 * passes its instruction to open(), asks for the next request, samples it in a batch with other
 * episodes' requests, hands the result back with accept(), and, after an action, steps the
 * environment and hands its answer to observe().
 */
export class EpisodeRun {
  phase: EpisodePhase = 'act';
  private window = new ContextWindow();
  private taskTurn: number[] = [];
  private readonly segments: Segment[] = [];
  private readonly events: EpisodeEvent[] = [];
  private windowVersion: number | null = null;
  private steps = 0;
  private compactions = 0;
  private reward = 0;
  private outcome: Outcome = 'failure';
  /** The action text accept() decoded, for the runner to send to env.step (phase 'env'). */
  pendingAction = '';
  /**
   * Tools format: the turn was not one good call, so the environment is not stepped; the runner
   * hands this back to observe() as the observation (the episode goes on).
   */
  pendingError: string | null = null;
  private readonly turns: TurnRecord[] = [];
  /** The window was rebuilt at a prefix break (tools format); until it generates, it is no segment. */
  private rebuilt = false;

  constructor(
    readonly spec: EpisodeSpec,
    private readonly config: RolloutConfig,
    private readonly layout: ChatLayout,
  ) {}

  /** Opens the first window `s ⊕ u` from the environment's reset. */
  open({ instruction }: EnvReset): void {
    this.taskTurn = encodeTaskTurn(this.layout, instruction);
    const c = this.config;
    const room = c.contextWindow - c.compactThreshold;
    const needed =
      this.layout.systemTurn.length +
      this.taskTurn.length +
      (c.resume.includeTask ? maxResumeTurnLength(this.layout, c.summaryMaxTokens) : 0);
    if (needed > room) {
      throw new InstructionTooLongError({ env: this.spec.env.name, seed: this.spec.seed, needed, room, config: c });
    }
    this.window.pushContext(this.layout.systemTurn);
    this.window.pushContext(this.taskTurn);
    this.decide();
  }

  /** The request for the current phase: act continues `h ⊕ generation prompt`, summarize continues `h ⊕ q_sum`. */
  request(): SampleRequest {
    const c = this.config;
    const h = this.window.tokens;
    const req: SampleRequest =
      this.phase === 'act'
        ? {
            prompt: [...h, ...this.layout.actionOpen],
            maxTokens: c.maxActionTokens,
            stopTokens: [this.layout.actStop],
            stage: 'act',
            episodeId: this.spec.episodeId,
          }
        : this.phase === 'summarize'
          ? {
              prompt: [...this.summaryContext(), ...this.layout.summaryPrompt],
              maxTokens: c.summaryMaxTokens,
              stopTokens: [this.layout.summaryStop],
              stage: 'summarize',
              episodeId: this.spec.episodeId,
            }
          : failNoRequest(this.spec.episodeId, this.phase);
    // The invariant method §2 asks the runtime to assert: no policy call sees more than C tokens.
    if (req.prompt.length + req.maxTokens > c.contextWindow) {
      throw new Error(
        `internal: episode ${this.spec.episodeId} would see ${req.prompt.length} + ${req.maxTokens} > C = ${c.contextWindow} tokens`,
      );
    }
    return req;
  }

  accept(result: SampleResult, policyVersion: number): void {
    if (this.phase !== 'act' && this.phase !== 'summarize') failDone(this.spec.episodeId);
    const act = this.phase === 'act';
    const maxTokens = act ? this.config.maxActionTokens : this.config.summaryMaxTokens;
    const stop = act ? this.layout.actStop : this.layout.summaryStop;
    checkResult(result, { maxTokens, stop, episodeId: this.spec.episodeId });
    if (this.phase === 'act') this.acceptAction(result, policyVersion);
    else this.acceptSummary(result, policyVersion);
  }

  /** The environment's answer to pendingAction: the observation turn, then done or the next decision. */
  observe(out: EnvStep): void {
    if (this.phase !== 'env') throw new Error(`internal: episode ${this.spec.episodeId} is not waiting for the env`);
    this.steps++;
    const obs = encodeObservationTurn({
      layout: this.layout,
      observation: out.observation,
      maxTokens: this.config.maxObservationTokens,
    });
    if (obs.cut) {
      this.events.push({
        kind: 'observation-cut',
        step: this.steps,
        originalTokens: obs.originalTokens,
        keptTokens: this.config.maxObservationTokens,
      });
    }
    this.window.pushContext(obs.tokens);
    if (out.done) this.finish(out.reward, isSuccess(out.reward) ? 'success' : 'failure');
    else this.decide();
  }

  /**
   * The environment failed during reset or a step: the episode ends as a fault (outcome
   * 'env-error', reward 0) with the reason in its events. Its segments stay in the record for
   * reading; training leaves the whole episode out (docs/faults.md).
   */
  failEnv(event: Omit<EnvErrorEvent, 'kind' | 'step'>): void {
    this.events.push({ kind: 'env-error', step: this.steps, ...event });
    if (this.phase !== 'done') this.finish(0, 'env-error');
  }

  /** A failed close after the episode ended: recorded, the outcome stands. */
  noteCloseError(event: Omit<EnvErrorEvent, 'kind' | 'step' | 'during'>): void {
    this.events.push({ kind: 'env-error', during: 'close', step: this.steps, ...event });
  }

  private acceptAction(result: SampleResult, policyVersion: number): void {
    const { tokenizer } = this.layout;
    this.windowVersion ??= policyVersion;
    const w = this.window;
    w.beginStep();
    w.pushContext(this.layout.actionOpen);
    w.pushGenerated(result.tokens, result.logprobs);
    const ended = result.tokens[result.tokens.length - 1] === this.layout.actStop;
    // The rest of the turn end and the observation's opening (mask 0). An action cut at its cap
    // gets the whole seam, its end marker included, so the layout stays parseable. In GLM-style
    // layouts the generated stop is itself the observation's role tag (chat-format.ts).
    w.pushContext(afterAction(this.layout, result.tokens));
    this.pendingError = null;
    this.phase = 'env';
    const agent = this.layout.agent;
    if (!agent) {
      this.pendingAction = tokenizer.decode(ended ? result.tokens.slice(0, -1) : result.tokens);
      return;
    }
    const start = w.stepStarts[w.stepCount - 1]!;
    const genStart = start + this.layout.actionOpen.length;
    const turn = readActionTurn({
      layout: this.layout,
      agent,
      generated: result.tokens,
      stepIds: w.tokens.slice(start),
    });
    this.turns.push(
      placeTurnRecord(turn.record, { segment: this.segments.length, at: genStart, length: result.tokens.length }),
    );
    this.pendingAction = turn.action ?? '';
    this.pendingError = turn.errorObservation;
    this.rebuilt = false;
    if (turn.rewritten === null) {
      w.endAssistant(turn.stripped);
      return;
    }
    // The template renders this turn differently in every later context than the ids the policy
    // generated after: the segment ends here, and the next one starts from the template's rendering.
    this.closeExecution();
    this.window = rewriteLastStep(w, turn.rewritten, turn.stripped);
    this.windowVersion = null;
    this.rebuilt = true;
  }

  /**
   * What a summary is sampled after and trained on, one function for both so they cannot differ.
   * Tools format: the summary request is a user query, so the template drops the window's
   * reasoning. Sampled after the window as generated (with it), the policy saw a context its record
   * never shows: summaries off its training, 2.7 nats per summary token from the trainer's log-probs.
   */
  private summaryContext(): readonly number[] {
    return this.layout.agent ? this.window.withoutReasoning() : this.window.tokens;
  }

  private acceptSummary(result: SampleResult, policyVersion: number): void {
    const old = this.window;
    const context = this.summaryContext();
    this.closeExecution();
    const summaryPrefix = context.length + this.layout.summaryPrompt.length;
    const tokens = [...context, ...this.layout.summaryPrompt, ...result.tokens];
    let summaryIds: readonly number[] = result.tokens;
    if (this.layout.agent) {
      const read = readSummaryTurn({ layout: this.layout, agent: this.layout.agent, generated: result.tokens });
      summaryIds = read.summaryIds;
      this.turns.push({ ...read.record, segment: this.segments.length, start: summaryPrefix, end: tokens.length });
    }
    this.segments.push({
      kind: 'summary',
      index: this.segments.length,
      policyVersion,
      tokens,
      lossMask: tokens.map((_, i) => (i >= summaryPrefix ? 1 : 0)),
      logprobs: tokens.map((_, i) => (i >= summaryPrefix ? (result.logprobs[i - summaryPrefix] ?? null) : null)),
    });

    // h' = s ⊕ [u] ⊕ u_resume(S) ⊕ whole tail steps (compaction.ts).
    this.compactions++;
    const { window, event } = compactWindow({
      layout: this.layout,
      config: this.config,
      taskTurn: this.taskTurn,
      old,
      summaryIds,
      compaction: this.compactions,
      afterStep: this.steps,
      summaryTokens: result.tokens.length,
    });
    this.events.push(event);
    this.window = window;
    this.windowVersion = null;
    this.rebuilt = false;
    this.decide();
  }

  /** Before every action (method §2): act if T_comp is free, else compact if allowed, else truncate. */
  private decide(): void {
    const c = this.config;
    if (this.steps >= c.stepLimit) this.finish(0, 'step-limit');
    else if (c.contextWindow - this.window.length >= c.compactThreshold) this.phase = 'act';
    else if (this.compactions < c.maxWindows - 1) this.phase = 'summarize';
    else this.finish(0, 'truncated');
  }

  private closeExecution(): void {
    const w = this.window;
    if (this.rebuilt && w.generatedCount === 0) return;
    this.segments.push({
      kind: 'execution',
      index: this.segments.length,
      policyVersion: this.windowVersion ?? 0,
      tokens: w.tokens.slice(),
      lossMask: w.lossMask.slice(),
      logprobs: w.logprobs.slice(),
    });
  }

  private finish(reward: number, outcome: Outcome): void {
    // An env failure during reset leaves an empty window: no execution segment to train.
    if (this.window.length > 0) this.closeExecution();
    this.reward = reward;
    this.outcome = outcome;
    this.phase = 'done';
  }

  record(): EpisodeRecord {
    if (this.phase !== 'done') throw new Error(`internal: episode ${this.spec.episodeId} is still running`);
    let generated = 0;
    for (const s of this.segments) for (const m of s.lossMask) generated += m;
    return {
      episodeId: this.spec.episodeId,
      env: this.spec.env.name,
      tokenizer: this.layout.tokenizerName,
      seed: this.spec.seed,
      reward: this.reward,
      outcome: this.outcome,
      compactions: this.compactions,
      contextWindow: this.config.contextWindow,
      maxWindows: this.config.maxWindows,
      steps: this.steps,
      generatedTokens: generated,
      segments: this.segments,
      events: this.events,
      ...(this.layout.agent
        ? { agentFormat: 'tools' as const, thinking: this.layout.agent.thinking, turns: this.turns }
        : {}),
    };
  }
}
