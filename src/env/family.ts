import type { z } from 'zod';
import type {
  ActionTools,
  ChatMessage,
  Environment,
  EnvSpec,
  RandomSource,
  Reasoner,
  TextPolicy,
} from '../contracts/index.ts';
import type { Rng } from '../util/random.ts';
import type { SummaryContent, SummaryWriters } from './summary-content.ts';

/** The slipped version of the expert's `action` (src/env/slip.ts), or undefined where it cannot slip. */
export type Slip = (action: string, messages: readonly ChatMessage[], rng: RandomSource) => string | undefined;

/**
 * Dense warm-up text (docs/sft.md): a sequence of parts, in order. 'context' is read, 'target' is
 * supervised, 'summary' is a supervised summary: the runtime's summary request q_sum is put before
 * it and the end-of-turn marker after it. 'instruction', 'action' and 'observation' are read as the
 * chat turns of an episode (an 'instruction' first also puts the system turn first); 'reply' is an
 * action turn that is supervised. The family
 * knows none of the markers: environments work in text.
 */
export type DensePart =
  | { kind: 'context' | 'target' | 'summary' | 'instruction' | 'action' | 'observation'; text: string }
  /**
   * An assistant turn that is supervised: all of it and its end-of-turn marker, or only its first
   * `words` words (the rest is read): a decision probe whose arguments the probe does not determine,
   * e.g. fog-courier's `go` whose direction depends on the search state (fog-courier/dense.ts).
   */
  | { kind: 'reply'; text: string; words?: number };

/** Seed ranges are half-open [start, end); train and eval ranges never overlap. */
export interface SeedRange {
  start: number;
  end: number;
}

/**
 * One procedurally generated task family. Knobs is a zod object schema whose defaults are the
 * family's standard difficulty; variants are named knob overrides (held-out combinations).
 */
export interface TaskFamily<Knobs extends Record<string, unknown> = Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  readonly knobs: z.ZodType<Knobs>;
  /** Named held-out variants: overrides of the default knobs never used in training. */
  readonly variants: Readonly<Record<string, Partial<Knobs>>>;
  readonly trainSeeds: SeedRange;
  readonly evalSeeds: SeedRange;
  /** A fresh environment instance with these knobs (validated by `knobs`). */
  create(knobs?: Partial<Knobs>): Environment;
  /**
   * Optional: how the episode of this seed is described as data for a job (rollout/episode-job.ts).
   * Absent: the family's name and knobs (the worker calls create). A task set names the task
   * folder of the seed instead (env/harbor/task-set.ts), which a worker loads where it runs.
   */
  envSpec?(seed: number, knobs: Record<string, unknown>): EnvSpec;
  /** A scripted expert that acts well from the visible context alone. */
  readonly expert: TextPolicy;
  /**
   * The actions as tools, for the tools format (`--agent-format tools`, docs/agent-format.md);
   * absent: the family runs in the text format only.
   */
  readonly tools?: ActionTools;
  /** Optional: the short reasoning the expert writes before its call with thinking on (default: it states the call). */
  readonly reasoner?: Reasoner;
  readonly summaryWriters: SummaryWriters;
  /** Optional: what the SFT recipe (docs/sft.md) needs beyond the expert and its writers. */
  readonly sft?: SftRecipe<Knobs>;
  /**
   * Optional: the clauses a summary written now should keep (the oracle's goal, facts and meta),
   * read from the window the policy saw when asked to summarize (q_sum last). `crl view` marks
   * which of them a summary kept (src/env/summary-facts.ts).
   */
  summaryFacts?(messages: readonly ChatMessage[]): SummaryContent;
  /**
   * Optional: the tokenizer this family's text needs when none is asked for ('word' when absent).
   * Shell output holds characters the word vocabulary cannot encode (shell-ledger: 'qwen3').
   */
  readonly tokenizer?: string;
  /**
   * Most episodes of this family to run at once when a whole SFT epoch of them is generated; absent:
   * all at once. A family whose episodes run commands in a sandbox sets it: 512 repo-repair episodes
   * at once on 2 cores time out their pytest runs and the expert succeeds in about half (32 at once:
   * 29 of 32). In-process families leave it unset (nothing to bound). Episodes draw from streams of
   * their own (model/sampler/sampler.ts), so the bound changes the wall time, not the episodes.
   */
  readonly maxConcurrentEpisodes?: number;
  /**
   * Optional: knobs a run in a subword tokenizer sets (`crl reproduce --tokenizer qwen3`):
   * kv-ledger's `{ valueWords: true }`, since the embedded model does not learn to copy numbers
   * of several tokens (docs/tasks.md, "Value words").
   */
  readonly subwordKnobs?: Readonly<Record<string, unknown>>;
  /**
   * Optional: rollout settings (method §2) the family is sized for, in its tokenizer's tokens
   * (contextWindow, compactThreshold, summaryMaxTokens, maxActionTokens, maxObservationTokens);
   * flags and configs override them; absent: the tokenizer's defaults.
   */
  readonly rollout?: Readonly<
    Partial<
      Record<
        'contextWindow' | 'compactThreshold' | 'summaryMaxTokens' | 'maxActionTokens' | 'maxObservationTokens',
        number
      >
    >
  >;
  /**
   * Optional: writes the task of this seed as a Harbor task folder at `dir` (created) and returns
   * it (`crl export-tasks`); the folder then runs with `crl run --env harbor:DIR`.
   */
  writeTaskFolder?(options: { seed: number; knobs: Knobs; dir: string }): string;
}

/** A family's part of the SFT recipe (docs/sft.md): the demonstrator's slips and the dense warm-up. */
export interface SftRecipe<Knobs extends Record<string, unknown> = Record<string, unknown>> {
  /**
   * How the expert's final decision goes wrong (a wrong value in the answer, `done`
   * before the drop), for an SFT demonstrator that slips (`slipP`, src/env/slip.ts); undefined
   * for an action that has no such mistake.
   */
  readonly slip?: Slip;
  /**
   * The family writes its values as value words (src/env/value-words.ts) whatever its
   * knobs (shell-ledger), so the dense warm-up's recall stage does too (recallValueWords).
   */
  readonly valueWords?: boolean;
  /**
   * Dense warm-up generator: one sequence with many supervised lookups (seeded by rng,
   * at most maxChunks chunks of stream, `probes` lookups, a summaryShare of them as summaries).
   * The recall stage before it is family independent (src/env/recall-form.ts). answerShare (default
   * 0): the share of episode-form sequences that end with the expert's final answer instead of a
   * summary, for a family that has such forms (kv-ledger).
   */
  dense?(options: {
    rng: Rng;
    knobs: Knobs;
    maxChunks: number;
    probes: number;
    summaryShare: number;
    answerShare?: number;
  }): DensePart[];
}
