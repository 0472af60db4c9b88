import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { EvalResultSchema, type EvalResult } from '../eval/eval-result.ts';
import type { RunInfo } from './provenance-notes.ts';
import {
  MetricsLineSchema,
  PipelineFileSchema,
  RUN_FILES,
  RunConfigHeadSchema,
  type Invocation,
  type MixedNote,
} from './run-files.ts';

/** One point of a training curve. */
export interface CurvePoint {
  system: string;
  run: string;
  /** Task family and training seed of the run (from its config.json; absent when unreadable). */
  env?: string;
  seed?: number;
  iteration: number;
  metric: string;
  value: number;
}

export interface ReportData {
  curves: CurvePoint[];
  evals: EvalResult[];
  /** Every run directory found, with its provenance (null for runs made before it was recorded). */
  runs: RunInfo[];
  /** From pipeline.json files: each `crl reproduce` call, and runs reused with another config. */
  invocations: Invocation[];
  mixed: MixedNote[];
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

/** How a report names a path: a function of the real path (identity unless the caller relocates). */
export type PathLabel = (path: string) => string;

/**
 * Names `path` relative to `from` (the directory a report is written to), with `/` separators, so
 * a report never carries the machine's absolute paths and its names stay valid when the report
 * and its runs move together. `.` when they are the same directory.
 */
export function relativeLabel(from: string): PathLabel {
  const base = resolve(from);
  return (path) => {
    const r = relative(base, resolve(path));
    if (r === '') return '.';
    // Another drive on Windows: no relative form exists; keep only the last two parts.
    if (isAbsolute(r)) return r.split(sep).slice(-2).join('/');
    return r.split(sep).join('/');
  };
}

/** Reads one run's config head: system, env, seed, provenance. */
function readRunInfo(dir: string, warnings: string[], label: PathLabel): RunInfo {
  const cfgPath = join(dir, RUN_FILES.config);
  try {
    const head = RunConfigHeadSchema.parse(JSON.parse(readFileSync(cfgPath, 'utf8')));
    return {
      label: label(dir),
      system: head.system,
      env: head.config?.env?.name,
      seed: head.config?.seed,
      provenance: head.provenance ?? null,
    };
  } catch {
    warnings.push(`${label(cfgPath)}: unreadable, using the directory name as the system`);
    return { label: label(dir), system: label(dir), provenance: null };
  }
}

/** Reads one run's curves; a torn last line (killed writer) is skipped with a warning. */
function readCurves(dir: string, info: RunInfo, warnings: string[], label: PathLabel): CurvePoint[] {
  const { system, env, seed } = info;
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
      warnings.push(`${label(join(dir, RUN_FILES.metrics))}:${i + 1}: skipped an unreadable line`);
      return;
    }
    for (const [metric, value] of Object.entries(parsed.data.metrics)) {
      if (value !== null && Number.isFinite(value))
        out.push({ system, run: label(dir), env, seed, iteration: parsed.data.iteration, metric, value });
    }
  });
  return out;
}

function readEvals(dir: string, warnings: string[], label: PathLabel): EvalResult[] {
  const evalDir = join(dir, RUN_FILES.eval);
  if (!isDir(evalDir)) return [];
  const out: EvalResult[] = [];
  for (const f of readdirSync(evalDir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    try {
      const r = EvalResultSchema.safeParse(JSON.parse(readFileSync(join(evalDir, f), 'utf8')));
      if (r.success) out.push(r.data);
      else warnings.push(`${label(join(evalDir, f))}: not a valid eval result (${r.error.issues[0]?.message})`);
    } catch (e) {
      // JSON.parse names no path; a read error names the real one, so say where in our own words.
      const detail = e instanceof SyntaxError ? e.message : 'could not be read';
      warnings.push(`${label(join(evalDir, f))}: ${detail}`);
    }
  }
  return out;
}

/**
 * Collects curves and eval results from run directories and pipeline directories (whose runs live
 * under systems/). A directory that does not exist is a warning, not a crash. Paths in curves and
 * warnings are named by `label` (see relativeLabel).
 */
export function collectReportData(dirs: readonly string[], label: PathLabel = (p) => p): ReportData {
  const data: ReportData = { curves: [], evals: [], runs: [], invocations: [], mixed: [], warnings: [] };
  const visit = (dir: string, depth: number) => {
    if (existsSync(join(dir, RUN_FILES.config))) {
      const info = readRunInfo(dir, data.warnings, label);
      data.runs.push(info);
      if (existsSync(join(dir, RUN_FILES.metrics))) data.curves.push(...readCurves(dir, info, data.warnings, label));
    } else if (existsSync(join(dir, RUN_FILES.metrics))) {
      data.curves.push(...readCurves(dir, readRunInfo(dir, data.warnings, label), data.warnings, label));
    }
    readPipeline(dir, data, label);
    data.evals.push(...readEvals(dir, data.warnings, label));
    const systems = join(dir, RUN_FILES.systems);
    if (depth < 2 && isDir(systems))
      for (const s of readdirSync(systems).sort()) if (isDir(join(systems, s))) visit(join(systems, s), depth + 1);
  };
  for (const d of dirs) {
    if (!isDir(d)) data.warnings.push(`${label(d)}: not a directory`);
    else visit(d, 0);
  }
  return data;
}

function readPipeline(dir: string, data: ReportData, label: PathLabel): void {
  const path = join(dir, RUN_FILES.pipeline);
  if (!existsSync(path)) return;
  try {
    const p = PipelineFileSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
    data.invocations.push(...p.invocations);
    data.mixed.push(...p.mixed);
  } catch {
    data.warnings.push(`${label(path)}: unreadable pipeline file (no invocations or mixed runs read from it)`);
  }
}
