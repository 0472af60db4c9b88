import { FAULT_KINDS, type FaultKind } from '../contracts/index.ts';
import { passAt1 } from './pass-at-1.ts';
import { EvalResultSchema, modeName, type EvalResult, type ModeResult } from './eval-result.ts';

/** What evaluation needs to know about one finished episode (a projection of a rollout record). */
export interface EpisodeOutcome {
  reward: number; // in [0, 1]
  compactions: number;
  outcome: 'success' | 'failure' | 'truncated' | 'step-limit' | 'env-error';
  /** Whose fault an 'env-error' was (docs/faults.md); it scores 0 in Pass@1 and is counted apart. */
  fault?: FaultKind;
  generatedTokens: number;
}

/** One episode to run: a task seed and which of its n samples this is (for the sampling seed). */
export interface EpisodeRequest {
  seed: number;
  sample: number;
}

/**
 * Runs a batch of episodes with at most `windows` windows at the evaluator's fixed C and returns
 * their outcomes in request order. experiments/ builds one from the rollout runner, a family and
 * a (possibly writer-routed) sampler; eval/ stays free of model and env classes.
 */
export type EpisodeBatchRunner = (options: {
  episodes: readonly EpisodeRequest[];
  windows: number;
}) => Promise<EpisodeOutcome[]>;

/** One mode (x1, x4, ...): every task seed times n samples, all in one batch. */
export async function evaluateMode(options: {
  run: EpisodeBatchRunner;
  taskSeeds: readonly number[];
  samplesPerTask: number;
  windows: number;
}): Promise<ModeResult> {
  const { run, taskSeeds, samplesPerTask, windows } = options;
  if (samplesPerTask < 1) throw new Error(`samplesPerTask must be >= 1, got ${samplesPerTask}`);
  const episodes = taskSeeds.flatMap((seed) =>
    Array.from({ length: samplesPerTask }, (_, sample) => ({ seed, sample })),
  );
  const outcomes = await run({ episodes, windows });
  if (outcomes.length !== episodes.length)
    throw new Error(`runner returned ${outcomes.length} outcomes for ${episodes.length} episodes`);
  const perTask = taskSeeds.map((_, t) =>
    outcomes.slice(t * samplesPerTask, (t + 1) * samplesPerTask).map((o) => o.reward),
  );
  const stat = passAt1(perTask);
  const mean = (f: (o: EpisodeOutcome) => number) => outcomes.reduce((a, o) => a + f(o), 0) / outcomes.length;
  return {
    windows,
    passAt1: stat.passAt1,
    low: stat.low,
    high: stat.high,
    tasks: stat.tasks,
    samples: stat.samples,
    effectiveSamples: stat.effectiveSamples,
    meanCompactions: mean((o) => o.compactions),
    truncatedRate: mean((o) => (o.outcome === 'truncated' ? 1 : 0)),
    meanGeneratedTokens: mean((o) => o.generatedTokens),
    faults: Object.fromEntries(
      FAULT_KINDS.map((k) => [
        k,
        outcomes.filter((o) => o.outcome === 'env-error' && (o.fault ?? 'environment') === k).length,
      ]),
    ) as Record<FaultKind, number>,
    perTask: perTask.map((s) => s.reduce((a, b) => a + b, 0) / s.length),
  };
}

/**
 * Evaluates one acting policy (with one summary writer) in several modes at the same C: the
 * method's x1 and x4 (method §8), and optionally longer horizons (more windows than training used).
 */
export async function evaluate(options: {
  run: EpisodeBatchRunner;
  system: string;
  policy: string;
  env: string;
  variant: string;
  summaryWriter: string;
  contextWindow: number;
  taskSeeds: readonly number[];
  samplesPerTask: number;
  windowsList: readonly number[];
  trainingWindows: number | null;
}): Promise<EvalResult> {
  if (options.samplesPerTask < 4) {
    // method §8: n >= 4 samples per task; fewer is allowed for smoke tests only, so say so loudly.
    process.stderr.write(
      `warning: ${options.samplesPerTask} samples per task (< 4): intervals are not docs/method.md's\n`,
    );
  }
  const modes: Record<string, ModeResult> = {};
  for (const windows of options.windowsList) {
    modes[modeName(windows)] = await evaluateMode({
      run: options.run,
      taskSeeds: options.taskSeeds,
      samplesPerTask: options.samplesPerTask,
      windows,
    });
  }
  return EvalResultSchema.parse({
    kind: 'crl-eval',
    version: 1,
    system: options.system,
    policy: options.policy,
    env: options.env,
    variant: options.variant,
    summaryWriter: options.summaryWriter,
    contextWindow: options.contextWindow,
    samplesPerTask: options.samplesPerTask,
    taskSeeds: [...options.taskSeeds],
    trainingWindows: options.trainingWindows,
    modes,
  });
}
