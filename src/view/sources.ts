import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
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
  /** The given directory or file it came from, by its base name (a pipeline's runs share one). */
  group: string;
  system: string | null;
  seed: number | null;
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

function runHead(dir: string): Pick<ViewSource, 'system' | 'seed' | 'env'> {
  try {
    const raw = JSON.parse(readFileSync(join(dir, RUN_FILES.config), 'utf8')) as unknown;
    const head = RunConfigHeadSchema.parse(raw);
    const env = head.config?.env?.name;
    const seed = head.config?.seed;
    return { system: head.system, seed: Number.isInteger(seed) ? seed! : null, env: env ?? null };
  } catch {
    return { system: null, seed: null, env: null };
  }
}

/** A run directory, or a pipeline's runs under systems/ (sorted); none for anything else. */
function runsOf(dir: string): string[] {
  const systems = join(dir, RUN_FILES.systems);
  return isRunDir(dir) ? [dir] : isDir(systems) ? listDirs(systems).filter(isRunDir) : [];
}

/**
 * The runs a given directory holds: itself, a pipeline's runs, or, for a directory of those (the
 * `runs/` that `crl train` and `crl reproduce` write into, as `tensorboard --logdir runs/` reads
 * it), the runs and pipelines directly inside it.
 */
function runsUnder(path: string): string[] {
  const own = runsOf(path);
  return own.length > 0 ? own : listDirs(path).flatMap(runsOf);
}

/** What a run is grouped under in the picker: its pipeline, else the directory it was given in. */
function groupOf(root: string, dir: string): string {
  const parent = dirname(dir);
  return basename(parent) === RUN_FILES.systems ? basename(dirname(parent)) : basename(root);
}

/** What `crl view` browses: its sources (append-only, so ids stay valid) and the given directories. */
export interface ViewSources {
  sources: ViewSource[];
  roots: string[];
  /**
   * Adds the runs that appeared under the given directories since the last look (a pipeline that
   * is still running starts its next system's run): new ids after the old ones.
   */
  rescan: () => void;
}

/**
 * Resolves `crl view`'s arguments: run directories, `crl reproduce` directories (their runs under
 * systems/), episode JSONL files (`crl run --out`) and sample files (samples/*.episodes.jsonl.gz).
 */
export function openSources(inputs: readonly string[]): ViewSources {
  if (inputs.length === 0) throw new ViewInputError('give at least one run directory or episode JSONL file');
  const sources: ViewSource[] = [];
  const roots: string[] = [];
  const add = (s: Omit<ViewSource, 'id'>) => sources.push({ ...s, id: sources.length });
  const addRun = (root: number, dir: string) => {
    const path = roots[root]!;
    const rel = relative(path, dir);
    const label = rel ? `${basename(path)}/${rel}` : basename(dir);
    add({ kind: 'run', label, path: dir, root, group: groupOf(path, dir), ...runHead(dir) });
  };
  for (const input of inputs) {
    const path = resolve(input);
    if (!existsSync(path)) throw new ViewInputError(`${input} does not exist`);
    if (isDir(path)) {
      const root = roots.push(path) - 1;
      const runs = runsUnder(path);
      if (runs.length === 0)
        throw new ViewInputError(
          `${input} is not a run directory (no ${RUN_FILES.config} or ${RUN_FILES.metrics}) and holds no runs under ${RUN_FILES.systems}/ or in its subdirectories; give a directory made by crl train or crl reproduce (or one holding such directories), or a JSONL file from crl run --out`,
        );
      for (const dir of runs) addRun(root, dir);
    } else if (path.endsWith('.jsonl') || SAMPLE_GZ.test(path)) {
      const episodes = loadFile(path); // fail now, with the line, rather than in the browser
      const env = episodes[0]?.record.env ?? null;
      add({
        kind: 'records',
        label: basename(path),
        path,
        root: null,
        group: basename(path),
        system: null,
        seed: null,
        env,
      });
    } else {
      throw new ViewInputError(
        `${input} is neither a directory nor an episode file (.jsonl from crl run --out, or samples/*.episodes.jsonl.gz)`,
      );
    }
  }
  const rescan = () => {
    const known = new Set(sources.map((s) => s.path));
    roots.forEach((root, i) => {
      for (const dir of runsUnder(root)) if (!known.has(dir)) addRun(i, dir);
    });
  };
  return { sources, roots, rescan };
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

/**
 * What a client compares to see whether a run's curves changed since it last fetched them: the
 * size and modification time of its metrics and timing logs (both only grow, or are cut on resume).
 */
export function seriesVersion(s: ViewSource): string {
  if (s.kind !== 'run') return '';
  return [RUN_FILES.metrics, RUN_FILES.timing]
    .map((f) => {
      try {
        const st = statSync(join(s.path, f));
        return `${st.size}@${st.mtimeMs}`;
      } catch {
        return '-';
      }
    })
    .join(',');
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
