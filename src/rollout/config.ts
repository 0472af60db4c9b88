import { z } from 'zod';
import {
  createChatLayout,
  DEFAULT_CHAT_TEMPLATES,
  maxResumeTurnLength,
  maxStepLength,
  stepMarkers,
  type ChatLayout,
} from './chat-layout.ts';
import { ChatTemplateError, type ChatTemplateSource } from './chat-format.ts';
import type { ActionTools } from '../contracts/index.ts';
import { toolsTokenUnits } from './agent-format/tools-sizing.ts';

/**
 * Rollout configuration (method §2). The token counts (C, T_comp and the caps) are counted in the
 * tokenizer's tokens, so their defaults depend on it (tokenUnitDefaults): the word vocabulary's are
 * sized for the built-in task suite (docs/decisions/0005-rollout.md for why compactThreshold is 112
 * rather than 96); a subword tokenizer gets each scaled by SUBWORD_TOKEN_SCALE (docs/rollout.md).
 */
export const RolloutConfigSchema = z
  .object({
    /** C: the most tokens one policy call may see, prompt plus generated. */
    contextWindow: z.number().int().min(8).optional(),
    /** T_comp: compact before the next action when C - |h| < T_comp. */
    compactThreshold: z.number().int().min(1).optional(),
    /** k: newest whole steps carried verbatim into the rebuilt window. */
    tailSteps: z.number().int().min(0).default(2),
    /** K: the most windows per episode (K - 1 compactions). */
    maxWindows: z.number().int().min(1).default(4),
    /** L_sum: summary cap, its stop token included. */
    summaryMaxTokens: z.number().int().min(1).optional(),
    /** Action cap, its stop token included. */
    maxActionTokens: z.number().int().min(1).optional(),
    /** Observation content cap; longer observations are cut and end with a cut marker. */
    maxObservationTokens: z.number().int().min(2).optional(),
    /** Actions per episode, over all windows. */
    stepLimit: z.number().int().min(1).default(64),
    /**
     * How the agent acts (docs/agent-format.md): 'text', its turn is the action; 'tools', its turn
     * is one tool call in its model's syntax, the environment's tools declared in the system turn.
     */
    agentFormat: z.enum(['text', 'tools']).default('text'),
    /** Tools format: the policy reasons in a thinking block before its call (the template's enable_thinking). */
    thinking: z.boolean().default(false),
    /** Tools format, thinking on: tokens added to each action's and summary's cap for the thinking block. */
    thinkingTokens: z.number().int().min(0).default(64),
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

/** The token-unit fields, whose defaults depend on the tokenizer. */
export interface TokenUnits {
  contextWindow: number;
  compactThreshold: number;
  summaryMaxTokens: number;
  maxActionTokens: number;
  maxObservationTokens: number;
}

/** A resolved rollout config: every field set. */
export type RolloutConfig = z.infer<typeof RolloutConfigSchema> & TokenUnits;
export type RolloutConfigInput = z.input<typeof RolloutConfigSchema>;

/** The word vocabulary's token-unit defaults (the built-in tasks were sized in them). */
export const WORD_TOKEN_UNITS: Readonly<TokenUnits> = Object.freeze({
  contextWindow: 256,
  compactThreshold: 112,
  summaryMaxTokens: 48,
  maxActionTokens: 12,
  maxObservationTokens: 32,
});

/**
 * How much longer a subword tokenizer writes the built-in tasks than the word vocabulary: Qwen3
 * writes a step, its turn markers included, in 1.84x the word count on kv-ledger (36.8 vs 20.0
 * tokens), 1.90x on fog-courier, 1.61x on hop-search (64 expert episodes each). Scaling C and
 * T_comp by it keeps about as many steps in a window (7.0 vs 7.2 on kv-ledger), so a task needs
 * as many compactions as with the word vocabulary.
 */
export const SUBWORD_TOKEN_SCALE = 1.8;

/** A word-vocabulary token count in a subword tokenizer's tokens. */
export function scaleTokenCount(n: number): number {
  return Math.round(n * SUBWORD_TOKEN_SCALE);
}

/** Defaults in the tokenizer's own tokens: the word vocabulary's, or those scaled for a subword tokenizer. */
export function tokenUnitDefaults(tokenizer: { wordLevel?: boolean }): TokenUnits {
  const w = WORD_TOKEN_UNITS;
  const k = (n: number) => (tokenizer.wordLevel ? n : scaleTokenCount(n));
  return {
    contextWindow: k(w.contextWindow),
    compactThreshold: k(w.compactThreshold),
    summaryMaxTokens: k(w.summaryMaxTokens),
    maxActionTokens: k(w.maxActionTokens),
    maxObservationTokens: k(w.maxObservationTokens),
  };
}

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
  const step = maxStepLength({ ...config, layout });
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
  const m = stepMarkers(layout);
  if (c.compactThreshold < b.requiredThreshold) {
    const short = b.requiredThreshold - c.compactThreshold;
    problems.push(
      `compactThreshold (T_comp) = ${c.compactThreshold} could overflow the window: it must be >= ` +
        `(maxActionTokens ${c.maxActionTokens} + ${m.action} markers) + (maxObservationTokens ${c.maxObservationTokens} + ${m.observation} markers) ` +
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
export function resolveRolloutConfig(options: {
  input?: unknown;
  tokenizer: ChatTemplateSource;
  /** The environment's actions as tools: needed by agentFormat 'tools'. */
  tools?: ActionTools | null;
}): {
  config: RolloutConfig;
  layout: ChatLayout;
} {
  const parsed = RolloutConfigSchema.safeParse(options.input ?? {});
  if (!parsed.success) {
    throw new RolloutConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(config)'}: ${i.message}`));
  }
  const defaults = tokenUnitDefaults(options.tokenizer.tokenizer);
  const d = parsed.data;
  const config: RolloutConfig = {
    ...d,
    contextWindow: d.contextWindow ?? defaults.contextWindow,
    compactThreshold: d.compactThreshold ?? defaults.compactThreshold,
    summaryMaxTokens: d.summaryMaxTokens ?? defaults.summaryMaxTokens,
    maxActionTokens: d.maxActionTokens ?? defaults.maxActionTokens,
    maxObservationTokens: d.maxObservationTokens ?? defaults.maxObservationTokens,
  };
  let layout: ChatLayout;
  if (config.agentFormat === 'tools' && !options.tools)
    throw new RolloutConfigError([
      'agentFormat: this environment declares no tools, so it runs in the text format only',
    ]);
  if (config.thinking && config.agentFormat !== 'tools')
    throw new RolloutConfigError(['thinking: a thinking block is part of the tools format (--agent-format tools)']);
  try {
    layout = createChatLayout({ tokenizer: options.tokenizer, templates: config.templates });
    if (config.agentFormat === 'tools' && options.tools) {
      const text = layout;
      layout = createChatLayout({
        tokenizer: options.tokenizer,
        templates: config.templates,
        agent: { tools: options.tools, thinking: config.thinking },
      });
      Object.assign(
        config,
        toolsTokenUnits({
          units: config,
          text,
          tools: layout,
          agent: layout.agent!,
          thinkingTokens: config.thinkingTokens,
        }),
      );
    }
  } catch (e) {
    if (e instanceof ChatTemplateError) throw e;
    throw new RolloutConfigError([`templates: ${(e as Error).message}`]);
  }
  const problems = budgetProblems(config, layout);
  if (problems.length > 0) throw new RolloutConfigError(problems);
  return { config, layout };
}

/** The caps a family may set (TaskFamily.rollout), scaled together with C. */
const CAPS = ['summaryMaxTokens', 'maxActionTokens', 'maxObservationTokens'] as const;

/**
 * A rollout input over a family's sizes (TaskFamily.rollout), as crl run, train and eval apply
 * them: the family's token sizes fill the fields the input leaves unset. When the input sets C
 * and the family has its own, the family's caps scale by the ratio of the two (rounded, at least
 * 1) and T_comp keeps the family's margin over the caps' sum (the turn markers and the summary
 * instruction, which do not scale), so `--context 2048` alone gives a window that still fits.
 */
export function overFamilySizes(
  sizes: Readonly<Record<string, number>> | undefined,
  input: Record<string, unknown>,
): Record<string, unknown> {
  const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const base: Record<string, number> = { ...sizes };
  const C = given.contextWindow;
  if (typeof C === 'number' && base.contextWindow !== undefined) {
    const ratio = C / base.contextWindow;
    const capsSum = () => CAPS.reduce((s, k) => s + (base[k] ?? 0), 0);
    const margin = base.compactThreshold !== undefined ? base.compactThreshold - capsSum() : undefined;
    for (const k of CAPS) if (base[k] !== undefined) base[k] = Math.max(1, Math.round(base[k] * ratio));
    if (margin !== undefined) base.compactThreshold = capsSum() + Math.max(0, margin);
  }
  return { ...base, ...given };
}
