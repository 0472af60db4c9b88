import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { codeVersion, commandLine } from '../util/provenance.ts';
import { archiveReportData } from './archive.ts';
import { collectReportData, relativeLabel } from './collect-runs.ts';
import { renderFigures } from './plots.ts';
import { provenanceSection, type ReportView } from './report-view.ts';
import { renderHtml } from './render-html.ts';
import { renderMarkdown } from './render-markdown.ts';
import { buildTables } from './tables.ts';

/**
 * `crl report`: reads run/pipeline directories and writes report.html (self-contained),
 * report.md and figures/*.svg into outDir. Missing data renders as "not run". Run directories are
 * named relative to outDir, so the report holds no absolute path of the machine that wrote it.
 * With `withData`, the raw data is first copied to outDir/data and the report is made from the
 * copy (archive.ts), so committing outDir commits what regenerates it.
 */
export async function writeReport(options: {
  runDirs: readonly string[];
  outDir: string;
  title?: string;
  trainingWindows?: number;
  /** C of the standard evaluations (default: the smallest C evaluated). */
  contextWindow?: number;
  withData?: boolean;
}): Promise<{ html: string; markdown: string; warnings: string[] }> {
  const archived = options.withData
    ? archiveReportData({ runDirs: options.runDirs, dataDir: join(options.outDir, 'data') })
    : null;
  const runDirs = archived?.dirs ?? options.runDirs;
  const label = relativeLabel(options.outDir);
  const data = collectReportData(runDirs, label);
  const tables = buildTables(data.evals, {
    trainingWindows: options.trainingWindows ?? 4,
    contextWindow: options.contextWindow,
    provenance: { runs: data.runs, mixed: data.mixed },
  });
  const figures = await renderFigures(data.curves);
  const view: ReportView = {
    title: options.title ?? 'CompactionRL report',
    tables,
    figures,
    warnings: data.warnings,
    sources: runDirs.map(label),
    provenance: provenanceSection({
      data,
      report: { ...codeVersion(), command: commandLine(), createdAt: new Date().toISOString() },
      label,
    }),
  };
  mkdirSync(join(options.outDir, 'figures'), { recursive: true });
  for (const f of figures) if (f.svg) writeFileAtomic(join(options.outDir, 'figures', `${f.def.id}.svg`), f.svg);
  const html = join(options.outDir, 'report.html');
  const markdown = join(options.outDir, 'report.md');
  writeFileAtomic(html, renderHtml(view));
  writeFileAtomic(markdown, renderMarkdown(view));
  return { html, markdown, warnings: [...(archived?.warnings ?? []), ...data.warnings] };
}
