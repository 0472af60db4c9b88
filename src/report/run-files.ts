import { z } from 'zod';
import { ProvenanceSchema } from '../util/provenance.ts';

/**
 * The run directory layout (house style habit 11), shared by the writer (experiments/) and the
 * reader (report/). Kept here because imports flow experiments -> report.
 *
 *   <run>/config.json            resolved config: { system, config, provenance } (src/util/provenance.ts)
 *   <run>/metrics.jsonl          one MetricsLine per iteration, names `group/name`: only values the
 *                                seed and inputs determine, so the same command writes the same bytes
 *   <run>/timing.jsonl           one TimingLine per iteration: the wall-clock numbers (`perf/...`)
 *                                and the counts timing decides (TIMING_COUNTS)
 *   <run>/events.out.tfevents.<seconds>.<host>   TensorBoard event files, one per train process:
 *                                the same numbers and the sampled episodes (experiments/runs/tensorboard-log.ts)
 *   <run>/checkpoints/iter-NNNNNN/   atomic checkpoints; checkpoints/latest.json points at one
 *   <run>/samples/iter-NNNNNN.txt    sample trajectories rendered for humans
 *   <run>/samples/iter-NNNNNN.episodes.jsonl.gz   the same episodes with per-token credit (sample-files.ts)
 *   <run>/eval/*.json            EvalResult files (src/eval/eval-result.ts)
 *   <run>/report/report.{html,md}
 * A pipeline directory (crl reproduce) holds runs under systems/<name>/ plus its own eval/ and
 * pipeline.json (PipelineFile: the preset, every invocation, runs reused with another config).
 */
export const RUN_FILES = {
  config: 'config.json',
  metrics: 'metrics.jsonl',
  timing: 'timing.jsonl',
  checkpoints: 'checkpoints',
  latest: 'latest.json',
  samples: 'samples',
  eval: 'eval',
  report: 'report',
  systems: 'systems',
  pipeline: 'pipeline.json',
} as const;

export const MetricsLineSchema = z
  .object({
    iteration: z.number().int().nonnegative(),
    metrics: z.record(z.string().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/), z.number().nullable()),
  })
  .strict();
export type MetricsLine = z.infer<typeof MetricsLineSchema>;

/**
 * The group of wall-clock numbers (seconds, tokens per second). They differ between any two runs
 * of one command, so they live in timing.jsonl and never in metrics.jsonl, which is kept to what
 * the seed and inputs determine. (Runs written before the split carry them in metrics.jsonl.)
 */
export const WALL_CLOCK_GROUP = 'perf/';

/**
 * Counts the machine's timing decides, not the seed and inputs, kept with the wall clock: busy
 * answers of engine replicas waited out. (Queue jobs run again, `rollout/retried`, stay in
 * metrics.jsonl: a lost worker is an event of the run that its metrics must show, though it
 * makes two runs of one command differ.)
 */
export const TIMING_COUNTS: readonly string[] = ['rollout/engine_busy_waits'];

/** Whether a metric belongs in timing.jsonl rather than metrics.jsonl. */
export function isTimingKey(key: string): boolean {
  return key.startsWith(WALL_CLOCK_GROUP) || TIMING_COUNTS.includes(key);
}

/** Keys earlier runs wrote to timing.jsonl that now go to metrics.jsonl: still read there, never written. */
const FORMER_TIMING_KEYS: readonly string[] = ['rollout/retried'];

export const TimingLineSchema = z
  .object({
    iteration: z.number().int().nonnegative(),
    timing: z.record(
      z.string().refine((k) => isTimingKey(k) || FORMER_TIMING_KEYS.includes(k), 'not a timing key'),
      z.number().nullable(),
    ),
  })
  .strict();
export type TimingLine = z.infer<typeof TimingLineSchema>;

/** The head of config.json that the report reads; the rest is the run's resolved config. */
export const RunConfigHeadSchema = z
  .object({
    system: z.string().min(1),
    config: z
      .object({ env: z.object({ name: z.string() }).loose().optional(), seed: z.number().optional() })
      .loose()
      .optional(),
    provenance: ProvenanceSchema.optional(),
  })
  .loose();

/** A run or eval file `crl reproduce --allow-mixed` reused although its config differs from the preset's. */
export const MixedNoteSchema = z
  .object({
    /** Relative to the pipeline directory. */
    path: z.string(),
    kind: z.enum(['run', 'eval']),
    env: z.string(),
    seed: z.number().int(),
    system: z.string(),
    /** `field: stored -> wanted`, a few at most. */
    differs: z.array(z.string()),
  })
  .strict();
export type MixedNote = z.infer<typeof MixedNoteSchema>;

/** One `crl reproduce` call on a pipeline directory (a directory computed in parts has several). */
export const InvocationSchema = ProvenanceSchema.omit({ configHash: true }).extend({ presetHash: z.string() });
export type Invocation = z.infer<typeof InvocationSchema>;

/**
 * pipeline.json: the preset as run (`preset` is its name, the rest its fields), the actor, every
 * invocation, and the mixed reuses. Fields of the preset are kept loose: the preset's own schema is
 * the code's Preset type, and --resume reads them back as they were written.
 */
export const PipelineFileSchema = z
  .object({
    preset: z.string(),
    actor: z.string(),
    invocations: z.array(InvocationSchema).default([]),
    mixed: z.array(MixedNoteSchema).default([]),
  })
  .loose();
export type PipelineFile = z.infer<typeof PipelineFileSchema>;

export function iterationDirName(iteration: number): string {
  return `iter-${String(iteration).padStart(6, '0')}`;
}
