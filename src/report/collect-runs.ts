import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { EvalResultSchema, type EvalResult } from '../eval/eval-result.ts';
import { MetricsLineSchema, RUN_FILES, RunConfigHeadSchema } from './run-files.ts';

/** One point of a training curve. */
export interface CurvePoint {
  system: string;
  run: string;
  iteration: number;
  metric: string;
  value: number;
}

export interface ReportData {
  curves: CurvePoint[];
  evals: EvalResult[];
  /** Files that could not be read; shown in the report, never fatal ("missing data is not run"). */
  warnings: string[];
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Reads one run's curves; a torn last line (killed writer) is skipped with a warning. */
function readCurves(dir: string, warnings: string[]): CurvePoint[] {
  const cfgPath = join(dir, RUN_FILES.config);
  let system = dir;
  try {
    system = RunConfigHeadSchema.parse(JSON.parse(readFileSync(cfgPath, 'utf8'))).system;
  } catch {
    warnings.push(`${cfgPath}: unreadable, using the directory name as the system`);
  }
  const out: CurvePoint[] = [];
  const lines = readFileSync(join(dir, RUN_FILES.metrics), 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let parsed;
    try {
      parsed = MetricsLineSchema.safeParse(JSON.parse(line));
    } catch {
      parsed = { success: false as const };
    }
    if (!parsed.success) {
      warnings.push(`${join(dir, RUN_FILES.metrics)}:${i + 1}: skipped an unreadable line`);
      return;
    }
    for (const [metric, value] of Object.entries(parsed.data.metrics)) {
      if (value !== null && Number.isFinite(value))
        out.push({ system, run: dir, iteration: parsed.data.iteration, metric, value });
    }
  });
  return out;
}

function readEvals(dir: string, warnings: string[]): EvalResult[] {
  const evalDir = join(dir, RUN_FILES.eval);
  if (!isDir(evalDir)) return [];
  const out: EvalResult[] = [];
  for (const f of readdirSync(evalDir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    try {
      const r = EvalResultSchema.safeParse(JSON.parse(readFileSync(join(evalDir, f), 'utf8')));
      if (r.success) out.push(r.data);
      else warnings.push(`${join(evalDir, f)}: not a valid eval result (${r.error.issues[0]?.message})`);
    } catch (e) {
      warnings.push(`${join(evalDir, f)}: ${(e as Error).message}`);
    }
  }
  return out;
}

/**
 * Collects curves and eval results from run directories and pipeline directories (whose runs live
 * under systems/). A directory that does not exist is a warning, not a crash.
 */
export function collectReportData(dirs: readonly string[]): ReportData {
  const data: ReportData = { curves: [], evals: [], warnings: [] };
  const visit = (dir: string, depth: number) => {
    if (existsSync(join(dir, RUN_FILES.metrics))) data.curves.push(...readCurves(dir, data.warnings));
    data.evals.push(...readEvals(dir, data.warnings));
    const systems = join(dir, RUN_FILES.systems);
    if (depth < 2 && isDir(systems))
      for (const s of readdirSync(systems).sort()) if (isDir(join(systems, s))) visit(join(systems, s), depth + 1);
  };
  for (const d of dirs) {
    if (!isDir(d)) data.warnings.push(`${d}: not a directory`);
    else visit(d, 0);
  }
  return data;
}
