import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { MetricsLineSchema, RUN_FILES } from './run-files.ts';
import { FIGURES } from './plots.ts';

/**
 * `crl report --with-data`: copies what a report is made from — pipeline.json, every evaluation
 * file, each run's config.json and the figure metrics of its metrics.jsonl — into `<out>/data`, so
 * the report can be committed with its raw numbers and `crl report <out>/data --out <out>`
 * regenerates it. Checkpoints and samples stay behind. Absolute paths inside the copied JSON that
 * point into the source directory are rewritten relative to it, so the copy names no machine path.
 */
export function archiveReportData(options: { runDirs: readonly string[]; dataDir: string }): {
  dirs: string[];
  /** Copied files that still name an absolute path outside their run (a path of this machine). */
  warnings: string[];
} {
  const dirs: string[] = [];
  const warnings: string[] = [];
  options.runDirs.forEach((dir, i) => {
    const target =
      options.runDirs.length === 1 ? options.dataDir : join(options.dataDir, `${i + 1}-${basename(resolve(dir))}`);
    copyRun({ src: resolve(dir), dst: target, root: resolve(dir), depth: 0, warnings });
    dirs.push(target);
  });
  return { dirs, warnings };
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();

interface CopyOptions {
  src: string;
  dst: string;
  root: string;
  depth: number;
  warnings: string[];
}

function copyRun(o: CopyOptions): void {
  mkdirSync(o.dst, { recursive: true });
  for (const name of [RUN_FILES.config, RUN_FILES.pipeline]) {
    const p = join(o.src, name);
    if (existsSync(p)) writeJson({ path: join(o.dst, name), text: readFileSync(p, 'utf8'), o });
  }
  const metrics = join(o.src, RUN_FILES.metrics);
  if (existsSync(metrics))
    writeFileAtomic(join(o.dst, RUN_FILES.metrics), figureMetrics(readFileSync(metrics, 'utf8')));
  const evalDir = join(o.src, RUN_FILES.eval);
  if (isDir(evalDir)) {
    mkdirSync(join(o.dst, RUN_FILES.eval), { recursive: true });
    for (const f of readdirSync(evalDir)
      .filter((n) => n.endsWith('.json'))
      .sort())
      writeJson({ path: join(o.dst, RUN_FILES.eval, f), text: readFileSync(join(evalDir, f), 'utf8'), o });
  }
  const systems = join(o.src, RUN_FILES.systems);
  if (o.depth < 2 && isDir(systems))
    for (const s of readdirSync(systems).sort())
      if (isDir(join(systems, s)))
        copyRun({ ...o, src: join(systems, s), dst: join(o.dst, RUN_FILES.systems, s), depth: o.depth + 1 });
}

/**
 * JSON re-written with absolute paths under `root` made relative to it (unparseable text copied as
 * is). An absolute path outside the run (an evaluation written elsewhere with --out, say) is kept,
 * since it is part of the record, and reported, so that nobody commits a machine path unawares.
 */
function writeJson(options: { path: string; text: string; o: CopyOptions }): void {
  const { path, text, o } = options;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    writeFileAtomic(path, text);
    return;
  }
  const outside: string[] = [];
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string' && isAbsolute(v)) {
      const r = relative(o.root, v);
      if (!(r.startsWith('..') || isAbsolute(r))) return r.split(sep).join('/') || '.';
      outside.push(v);
      return v;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  writeFileAtomic(path, `${JSON.stringify(walk(value), null, 2)}\n`);
  if (outside.length)
    o.warnings.push(
      `${path} keeps ${outside.length === 1 ? 'an absolute path' : `${outside.length} absolute paths`} from outside its run directory (${outside[0]}${outside.length > 1 ? ', …' : ''}): a path of this machine; rerun what wrote it with paths inside the run, or edit the copy, before committing it`,
    );
}

/** metrics.jsonl kept to the metrics the figures draw (the rest is for debugging, and large). */
function figureMetrics(text: string): string {
  const keep = new Set(FIGURES.map((f) => f.metric));
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const r = (() => {
      try {
        return MetricsLineSchema.safeParse(JSON.parse(line));
      } catch {
        return null;
      }
    })();
    if (!r?.success) continue;
    const metrics = Object.fromEntries(Object.entries(r.data.metrics).filter(([k]) => keep.has(k)));
    lines.push(JSON.stringify({ iteration: r.data.iteration, metrics }));
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
