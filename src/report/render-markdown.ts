import type { RenderedFigure } from './plots.ts';
import { VIEW_URL, viewCommand } from './render-html.ts';
import { formatCell, type Table } from './tables.ts';

/** Markdown rendering of the report: the tables, and each figure's file or "not run". */
export function renderMarkdown(options: {
  title: string;
  tables: readonly Table[];
  figures: readonly RenderedFigure[];
  warnings: readonly string[];
  sources: readonly string[];
}): string {
  const out: string[] = [`# ${options.title}`, '', `Runs: ${options.sources.map((s) => `\`${s}\``).join(', ')}`, ''];
  out.push(
    `The same runs in the interactive viewer (curves, episodes, per-token credit): from this report's folder run \`${viewCommand(options.sources)}\` and open ${VIEW_URL}.`,
    '',
  );
  out.push(
    'Pass@1 in percent with 95% intervals (Wilson, cluster-adjusted over tasks; docs/decisions/0007-experiments.md).',
    '',
  );
  for (const t of options.tables) {
    out.push(`## ${t.title}`, '', `_${t.caption}_`, '');
    out.push(`| system | ${t.columns.join(' | ')} |`, `|---|${t.columns.map(() => '---').join('|')}|`);
    for (const r of t.rows) out.push(`| ${r.label} | ${r.cells.map(formatCell).join(' | ')} |`);
    out.push('');
  }
  out.push('## Training curves (Figure 4 analogue)', '');
  for (const f of options.figures)
    out.push(`- ${f.def.title} (\`${f.def.metric}\`): ${f.svg ? `figures/${f.def.id}.svg` : 'not run'}`);
  if (options.warnings.length) out.push('', '## Warnings', '', ...options.warnings.map((w) => `- ${w}`));
  return `${out.join('\n')}\n`;
}
