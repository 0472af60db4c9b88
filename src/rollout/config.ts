import { z } from 'zod';
import {
  createChatLayout,
  DEFAULT_CHAT_TEMPLATES,
  maxResumeTurnLength,
  maxStepLength,
  type ChatLayout,
} from './chat-layout.ts';
import type { Tokenizer } from './types.ts';

/**
 * Rollout configuration (method §2). Defaults are sized for the built-in task suite; see
 * docs/decisions/0005-rollout.md for why compactThreshold defaults to 112 rather than 96.
 */
export const RolloutConfigSchema = z
  .object({
    /** C: the most tokens one policy call may see, prompt plus generated. */
    contextWindow: z.number().int().min(8).default(256),
    /** T_comp: compact before the next action when C - |h| < T_comp. */
    compactThreshold: z.number().int().min(1).default(112),
    /** k: newest whole steps carried verbatim into the rebuilt window. */
    tailSteps: z.number().int().min(0).default(2),
    /** K: the most windows per episode (K - 1 compactions). */
    maxWindows: z.number().int().min(1).default(4),
    /** L_sum: summary cap, its <eot> included. */
    summaryMaxTokens: z.number().int().min(1).default(48),
    /** Action cap, its <eot> included. */
    maxActionTokens: z.number().int().min(1).default(12),
    /** Observation content cap; longer observations are cut and end with <cut>. */
    maxObservationTokens: z.number().int().min(2).default(32),
    /** Actions per episode, over all windows. */
    stepLimit: z.number().int().min(1).default(64),
    temperature: z.number().min(0).default(1),
    topP: z.number().gt(0).max(1).default(1),
    resume: z
      .object({
        /** Repeat the original instruction u in rebuilt windows (method §2: default off). */
        includeTask: z.boolean().default(false),
      })
      .strict()
      .default({ includeTask: false }),
    templates: z
      .object({
        system: z.string().default(DEFAULT_CHAT_TEMPLATES.system),
        summaryInstruction: z.string().default(DEFAULT_CHAT_TEMPLATES.summaryInstruction),
        resumePrefix: z.string().default(DEFAULT_CHAT_TEMPLATES.resumePrefix),
      })
      .strict()
      .default({ ...DEFAULT_CHAT_TEMPLATES }),
  })
  .strict();

export type RolloutConfig = z.infer<typeof RolloutConfigSchema>;
export type RolloutConfigInput = z.input<typeof RolloutConfigSchema>;

/** A rollout config a user can fix: the message says which numbers to change. */
export class RolloutConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid rollout config:\n  - ${problems.join('\n  - ')}`);
    this.name = 'RolloutConfigError';
  }
}

/** The budget terms of method §2, for messages and the docs. */
export interface BudgetTerms {
  /** Longest step with its turn markers. */
  step: number;
  /** |q_sum| with its markers. */
  summaryPrompt: number;
  /** T_comp must be at least this. */
  requiredThreshold: number;
  /** |s| + |u_resume(S)| for a summary of L_sum tokens, no tail. */
  resumeStart: number;
  /** C - T_comp: the most a window may hold when it starts. */
  startRoom: number;
}

export function budgetTerms(config: RolloutConfig, layout: ChatLayout): BudgetTerms {
  const step = maxStepLength(config);
  const summaryPrompt = layout.summaryPrompt.length;
  return {
    step,
    summaryPrompt,
    requiredThreshold: step + summaryPrompt + config.summaryMaxTokens,
    resumeStart: layout.systemTurn.length + maxResumeTurnLength(layout, config.summaryMaxTokens),
    startRoom: config.contextWindow - config.compactThreshold,
  };
}

/**
 * The overflow checks of method §2: with these, no policy call can see more than C tokens.
 * Returns one message per violated condition (empty when the config is safe).
 */
export function budgetProblems(config: RolloutConfig, layout: ChatLayout): string[] {
  const b = budgetTerms(config, layout);
  const c = config;
  const problems: string[] = [];
  if (c.compactThreshold < b.requiredThreshold) {
    const short = b.requiredThreshold - c.compactThreshold;
    problems.push(
      `compactThreshold (T_comp) = ${c.compactThreshold} could overflow the window: it must be >= ` +
        `(maxActionTokens ${c.maxActionTokens} + 2 markers) + (maxObservationTokens ${c.maxObservationTokens} + 2 markers) ` +
        `+ summary instruction ${b.summaryPrompt} + summaryMaxTokens ${c.summaryMaxTokens} = ${b.requiredThreshold}. ` +
        `Raise compactThreshold to ${b.requiredThreshold} or more, or lower maxActionTokens + maxObservationTokens + summaryMaxTokens by ${short}.`,
    );
  }
  if (b.startRoom < b.resumeStart) {
    problems.push(
      `contextWindow (C) = ${c.contextWindow} minus compactThreshold (T_comp) = ${c.compactThreshold} leaves ${b.startRoom} tokens ` +
        `to start a window, but a rebuilt window needs system prompt ${layout.systemTurn.length} + resume turn with a ` +
        `summary of summaryMaxTokens ${c.summaryMaxTokens} = ${b.resumeStart}. Raise contextWindow to ` +
        `${c.compactThreshold + b.resumeStart} or more, or lower compactThreshold / summaryMaxTokens.`,
    );
  }
  if (c.topP <= 0) problems.push(`topP must be in (0, 1], got ${c.topP}`);
  return problems;
}

/** Parses and checks a config; throws RolloutConfigError listing every problem. */
export function resolveRolloutConfig(options: { input?: unknown; tokenizer: Tokenizer }): {
  config: RolloutConfig;
  layout: ChatLayout;
} {
  const parsed = RolloutConfigSchema.safeParse(options.input ?? {});
  if (!parsed.success) {
    throw new RolloutConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(config)'}: ${i.message}`));
  }
  const config = parsed.data;
  let layout: ChatLayout;
  try {
    layout = createChatLayout({ tokenizer: options.tokenizer, templates: config.templates });
  } catch (e) {
    throw new RolloutConfigError([`templates: ${(e as Error).message}`]);
  }
  const problems = budgetProblems(config, layout);
  if (problems.length > 0) throw new RolloutConfigError(problems);
  return { config, layout };
}
