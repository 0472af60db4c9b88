import { existsSync } from 'node:fs';
import { isTimingKey, TimingLineSchema, type TimingLine } from '../../report/run-files.ts';
import { appendLineSync, writeFileAtomic } from '../../util/atomic-write.ts';
import { readJsonLines, storedNumbers } from './metrics-log.ts';

/**
 * The run's timing JSONL (timing.jsonl, beside metrics.jsonl): one line per finished iteration with
 * its wall-clock numbers (`perf/...`: seconds, tokens per second) and the counts timing decides
 * (run-files.ts TIMING_COUNTS), which differ between two runs of one command. Kept out of
 * metrics.jsonl so that file is determined by seed and inputs.
 */

/** An iteration's values split into what the seed and inputs determine and what timing does. */
export function splitWallClock(values: Readonly<Record<string, number>>): {
  metrics: Record<string, number>;
  timing: Record<string, number>;
} {
  const metrics: Record<string, number> = {};
  const timing: Record<string, number> = {};
  for (const [k, v] of Object.entries(values)) (isTimingKey(k) ? timing : metrics)[k] = v;
  return { metrics, timing };
}

export function appendTiming(options: {
  path: string;
  iteration: number;
  timing: Readonly<Record<string, number>>;
}): TimingLine {
  const line = TimingLineSchema.parse({ iteration: options.iteration, timing: storedNumbers(options.timing) });
  appendLineSync(options.path, JSON.stringify(line));
  return line;
}

/** Every whole, valid line in file order (none when the file is absent, as in runs made before it). */
export function readTiming(path: string): TimingLine[] {
  return readJsonLines(path, TimingLineSchema);
}

/**
 * Resume step, beside truncateMetrics: keep the lines of iterations up to the checkpoint and drop
 * the rest, a torn last line included, so the rerun iterations are timed once. Unlike the metrics
 * a missing line is no error: the iteration's timing line is written after its metrics line, and
 * a run made before timing.jsonl existed has none.
 */
export function truncateTiming(options: { path: string; lastIteration: number }): void {
  if (!existsSync(options.path)) return;
  const kept = readTiming(options.path).filter((l) => l.iteration <= options.lastIteration);
  writeFileAtomic(options.path, kept.map((l) => `${JSON.stringify(l)}\n`).join(''));
}
