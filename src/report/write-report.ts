import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { collectReportData, relativeLabel } from './collect-runs.ts';
import { renderFigures } from './plots.ts';
import { renderHtml } from './render-html.ts';
import { renderMarkdown } from './render-markdown.ts';
import { buildTables } from './tables.ts';

/**
 * `crl report`: reads run/pipeline directories and writes report.html (self-contained),
 * report.md and figures/*.svg into outDir. Missing data renders as "not run". Run directories are
 * named relative to outDir, so the report holds no absolute path of the machine that wrote it.
 */
export async function writeReport(options: {
  runDirs: readonly string[];
  outDir: string;
  title?: string;
  trainingWindows?: number;
}): Promise<{ html: string; markdown: string; warnings: string[] }> {
  const label = relativeLabel(options.outDir);
  const data = collectReportData(options.runDirs, label);
  const tables = buildTables(data.evals, options.trainingWindows ?? 4);
  const figures = await renderFigures(data.curves);
  const title = options.title ?? 'CompactionRL report';
  const view = { title, tables, figures, warnings: data.warnings, sources: options.runDirs.map(label) };
  mkdirSync(join(options.outDir, 'figures'), { recursive: true });
  for (const f of figures) if (f.svg) writeFileAtomic(join(options.outDir, 'figures', `${f.def.id}.svg`), f.svg);
  const html = join(options.outDir, 'report.html');
  const markdown = join(options.outDir, 'report.md');
  writeFileAtomic(html, renderHtml(view));
  writeFileAtomic(markdown, renderMarkdown(view));
  return { html, markdown, warnings: data.warnings };
}
