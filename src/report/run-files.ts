import { z } from 'zod';

/**
 * The run directory layout (house style habit 11), shared by the writer (experiments/) and the
 * reader (report/). Kept here because imports flow experiments -> report.
 *
 *   <run>/config.json            resolved config: { system, config } (RunConfigFile)
 *   <run>/metrics.jsonl          one MetricsLine per iteration, names `group/name`
 *   <run>/checkpoints/iter-NNNNNN/   atomic checkpoints; checkpoints/latest.json points at one
 *   <run>/samples/iter-NNNNNN.txt    sample trajectories rendered for humans
 *   <run>/samples/iter-NNNNNN.episodes.jsonl.gz   the same episodes with per-token credit (sample-files.ts)
 *   <run>/eval/*.json            EvalResult files (src/eval/eval-result.ts)
 *   <run>/report/report.{html,md}
 * A pipeline directory (crl reproduce) holds runs under systems/<name>/ plus its own eval/.
 */
export const RUN_FILES = {
  config: 'config.json',
  metrics: 'metrics.jsonl',
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

/** The head of config.json that the report reads; the rest is the run's resolved config. */
export const RunConfigHeadSchema = z.object({ system: z.string().min(1) }).loose();

export function iterationDirName(iteration: number): string {
  return `iter-${String(iteration).padStart(6, '0')}`;
}
