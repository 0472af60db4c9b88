import { existsSync, readFileSync } from 'node:fs';
import { MetricsLineSchema, type MetricsLine } from '../report/run-files.ts';
import { appendLineSync, writeFileAtomic } from '../util/atomic-write.ts';

/**
 * The run's metrics JSONL: one line per finished iteration, names `group/name` (house style 11).
 * Non-finite numbers are stored as null (JSON has no NaN).
 */
export function appendMetrics(options: {
  path: string;
  iteration: number;
  metrics: Readonly<Record<string, number>>;
}): MetricsLine {
  const metrics: Record<string, number | null> = {};
  for (const k of Object.keys(options.metrics).sort()) {
    const v = options.metrics[k]!;
    metrics[k] = Number.isFinite(v) ? v : null;
  }
  const line = MetricsLineSchema.parse({ iteration: options.iteration, metrics });
  appendLineSync(options.path, JSON.stringify(line));
  return line;
}

/** Every whole, valid line in file order; a torn or invalid line ends the read (it was the last write). */
export function readMetrics(path: string): MetricsLine[] {
  if (!existsSync(path)) return [];
  const out: MetricsLine[] = [];
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    if (text.trim() === '') continue;
    let parsed;
    try {
      parsed = MetricsLineSchema.safeParse(JSON.parse(text));
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
