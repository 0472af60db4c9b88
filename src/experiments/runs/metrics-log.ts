import { existsSync, readFileSync } from 'node:fs';
import type { z } from 'zod';
import { isTimingKey, MetricsLineSchema, type MetricsLine } from '../../report/run-files.ts';
import { appendLineSync, writeFileAtomic } from '../../util/atomic-write.ts';

/**
 * The run's metrics JSONL: one line per finished iteration, names `group/name` (house style 11),
 * keys sorted. Non-finite numbers are stored as null (JSON has no NaN). Wall-clock numbers
 * (`perf/...`) and the counts timing decides are refused: they go to timing.jsonl (timing-log.ts),
 * so that the same command writes the same metrics.jsonl bytes.
 */
export function appendMetrics(options: {
  path: string;
  iteration: number;
  metrics: Readonly<Record<string, number>>;
}): MetricsLine {
  const clock = Object.keys(options.metrics).find(isTimingKey);
  if (clock !== undefined) throw new Error(`internal: ${clock} depends on timing; it belongs in timing.jsonl`);
  const line = MetricsLineSchema.parse({ iteration: options.iteration, metrics: storedNumbers(options.metrics) });
  appendLineSync(options.path, JSON.stringify(line));
  return line;
}

/** Keys sorted (so the bytes do not depend on insertion order), non-finite numbers as null. */
export function storedNumbers(values: Readonly<Record<string, number>>): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const k of Object.keys(values).sort()) {
    const v = values[k]!;
    out[k] = Number.isFinite(v) ? v : null;
  }
  return out;
}

/** Every whole, valid line in file order; a torn or invalid line ends the read (it was the last write). */
export function readMetrics(path: string): MetricsLine[] {
  return readJsonLines(path, MetricsLineSchema);
}

/** The whole, valid lines of a JSONL file up to the first torn or invalid one. */
export function readJsonLines<T>(path: string, schema: z.ZodType<T>): T[] {
  if (!existsSync(path)) return [];
  const out: T[] = [];
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    if (text.trim() === '') continue;
    let parsed;
    try {
      parsed = schema.safeParse(JSON.parse(text));
    } catch {
      break;
    }
    if (!parsed.success) break;
    out.push(parsed.data);
  }
  return out;
}

/**
 * Resume step: keep exactly the lines of iterations 1..lastIteration (those the checkpoint covers)
 * and drop the rest, including a torn last line. Iterations after the checkpoint will be rerun and
 * logged again, so none is lost and none is repeated.
 */
export function truncateMetrics(options: { path: string; lastIteration: number }): MetricsLine[] {
  const kept = readMetrics(options.path).filter((l) => l.iteration <= options.lastIteration);
  const expected = Array.from({ length: options.lastIteration }, (_, i) => i + 1);
  const have = kept.map((l) => l.iteration);
  if (have.length !== expected.length || have.some((it, i) => it !== expected[i])) {
    throw new Error(
      `${options.path}: expected metrics for iterations 1..${options.lastIteration} before resuming, found [${have.join(', ')}]`,
    );
  }
  writeFileAtomic(options.path, kept.map((l) => `${JSON.stringify(l)}\n`).join(''));
  return kept;
}
