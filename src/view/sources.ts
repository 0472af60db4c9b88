import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { collectReportData } from '../report/collect-runs.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { readTiming } from '../experiments/runs/timing-log.ts';
import { RUN_FILES, RunConfigHeadSchema } from '../report/run-files.ts';
import { listSampleFiles, readSampleFile } from '../report/sample-files.ts';
import { parseRecordsJsonl } from '../rollout/record.ts';
import type { EvalRow, Source } from './api-schema.ts';
import type { LoadedEpisode } from './episode-view.ts';

/** Raised for an input `crl view` cannot show; the message says what would work. */
export class ViewInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ViewInputError';
  }
}

/** One thing to browse: a run directory, or an episode file. */
export interface ViewSource {
  id: number;
  kind: Source['kind'];
  label: string;
  /** The run directory, or the episode file. */
  path: string;
  /** Index of the given directory it lies under (for /files/ links), or null for a file. */
  root: number | null;
  system: string | null;
  env: string | null;
}

const SAMPLE_GZ = /\.episodes\.jsonl\.gz$/;

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isRunDir(dir: string): boolean {
  return existsSync(join(dir, RUN_FILES.config)) || existsSync(join(dir, RUN_FILES.metrics));
}

function runHead(dir: string): { system: string | null; env: string | null } {
  try {
    const raw = JSON.parse(readFileSync(join(dir, RUN_FILES.config), 'utf8')) as unknown;
    const head = RunConfigHeadSchema.parse(raw);
    const env = (head.config as { env?: { name?: unknown } } | undefined)?.env?.name;
    return { system: head.system, env: typeof env === 'string' ? env : null };
  } catch {
    return { system: null, env: null };
  }
}

/**
 * Resolves `crl view`'s arguments: run directories, `crl reproduce` directories (their runs under
 * systems/), episode JSONL files (`crl run --out`) and sample files (samples/*.episodes.jsonl.gz).
 */
export function openSources(inputs: readonly string[]): { sources: ViewSource[]; roots: string[] } {
  if (inputs.length === 0) throw new ViewInputError('give at least one run directory or episode JSONL file');
  const sources: ViewSource[] = [];
  const roots: string[] = [];
  const add = (s: Omit<ViewSource, 'id'>) => sources.push({ ...s, id: sources.length });
  for (const input of inputs) {
    const path = resolve(input);
    if (!existsSync(path)) throw new ViewInputError(`${input} does not exist`);
    if (isDir(path)) {
      const root = roots.push(path) - 1;
      const systems = join(path, RUN_FILES.systems);
      const runs = isRunDir(path) ? [path] : isDir(systems) ? listDirs(systems).filter(isRunDir) : [];
      if (runs.length === 0)
        throw new ViewInputError(
          `${input} is not a run directory (no ${RUN_FILES.config} or ${RUN_FILES.metrics}) and holds no runs under ${RUN_FILES.systems}/; give a directory made by crl train or crl reproduce, or a JSONL file from crl run --out`,
        );
      for (const dir of runs) {
        const head = runHead(dir);
        const rel = relative(path, dir);
        add({ kind: 'run', label: rel ? `${basename(path)}/${rel}` : basename(dir), path: dir, root, ...head });
      }
    } else if (path.endsWith('.jsonl') || SAMPLE_GZ.test(path)) {
      const episodes = loadFile(path); // fail now, with the line, rather than in the browser
      add({
        kind: 'records',
        label: basename(path),
        path,
        root: null,
        system: null,
        env: episodes[0]?.record.env ?? null,
      });
    } else {
      throw new ViewInputError(
        `${input} is neither a directory nor an episode file (.jsonl from crl run --out, or samples/*.episodes.jsonl.gz)`,
      );
    }
  }
  return { sources, roots };
}

function listDirs(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .map((n) => join(dir, n))
    .filter(isDir);
}

/** Parsed episode files, reread when the file changes (a live run keeps writing samples). */
const fileCache = new Map<string, { mtimeMs: number; episodes: LoadedEpisode[] }>();

function loadFile(path: string): LoadedEpisode[] {
  const mtimeMs = statSync(path).mtimeMs;
  const hit = fileCache.get(path);
  if (hit && hit.mtimeMs === mtimeMs) return hit.episodes;
  let episodes: LoadedEpisode[];
  try {
    episodes = SAMPLE_GZ.test(path)
      ? readSampleFile(path).map((e) => ({ record: e.record, credit: e.credit }))
      : parseRecordsJsonl(readFileSync(path, 'utf8')).map((record) => ({ record, credit: null }));
  } catch (e) {
    throw new ViewInputError(`${path}: ${(e as Error).message}`);
  }
  fileCache.set(path, { mtimeMs, episodes });
  return episodes;
}

/** Iterations with episodes: a run's sample files; a file is one group, iteration 0 (or its own). */
export function sourceIterations(s: ViewSource): number[] {
  if (s.kind === 'records') return [0];
  return listSampleFiles(s.path).map((f) => f.iteration);
}

/** The episodes of one iteration, or null when there are none. */
export function sourceEpisodes(s: ViewSource, iteration: number): LoadedEpisode[] | null {
  if (s.kind === 'records') return iteration === 0 ? loadFile(s.path) : null;
  const file = listSampleFiles(s.path).find((f) => f.iteration === iteration);
  return file ? loadFile(file.path) : null;
}

/** metric -> [iteration, value] pairs (non-finite values left out), timing.jsonl's wall-clock numbers included. */
export function sourceSeries(s: ViewSource): Record<string, [number, number][]> {
  const out: Record<string, [number, number][]> = {};
  if (s.kind !== 'run') return out;
  const add = (iteration: number, values: Record<string, number | null>) => {
    for (const [k, v] of Object.entries(values))
      if (v !== null && Number.isFinite(v)) (out[k] ??= []).push([iteration, v]);
  };
  for (const line of readMetrics(join(s.path, RUN_FILES.metrics))) add(line.iteration, line.metrics);
  for (const line of readTiming(join(s.path, RUN_FILES.timing))) add(line.iteration, line.timing);
  return out;
}

export function hasMetrics(s: ViewSource): boolean {
  return s.kind === 'run' && existsSync(join(s.path, RUN_FILES.metrics));
}

/** The run's static report, as a /files/ link, when it has one. */
export function reportHref(s: ViewSource, roots: readonly string[]): string | null {
  if (s.root === null) return null;
  const root = roots[s.root]!;
  for (const dir of [s.path, root]) {
    const html = join(dir, RUN_FILES.report, 'report.html');
    if (existsSync(html))
      return `/files/${s.root}/${relative(root, html).split('/').map(encodeURIComponent).join('/')}`;
  }
  return null;
}

/** Evaluation rows of every given directory (runs and pipelines), as the report reads them. */
export function evalRows(roots: readonly string[]): { evals: EvalRow[]; warnings: string[] } {
  const data = collectReportData(roots);
  const evals = data.evals.map((e) => ({
    system: e.system,
    env: e.env,
    variant: e.variant,
    summaryWriter: e.summaryWriter,
    contextWindow: e.contextWindow,
    modes: Object.fromEntries(
      Object.entries(e.modes).map(([k, m]) => [
        k,
        { passAt1: m.passAt1, low: m.low, high: m.high, samples: m.samples },
      ]),
    ),
  }));
  return { evals, warnings: data.warnings };
}
