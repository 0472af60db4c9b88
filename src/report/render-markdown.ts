import { formatCell, isEstimate } from './cells.ts';
import { VIEW_URL, viewCommand } from './render-html.ts';
import { provenanceLines, type ReportView } from './report-view.ts';

/** Markdown rendering of the report: the tables with their notes, figures, provenance. */
export function renderMarkdown(view: ReportView): string {
  const out: string[] = [`# ${view.title}`, '', `Runs: ${view.sources.map((s) => `\`${s}\``).join(', ')}`, ''];
  out.push(
    `The same runs in the interactive viewer (curves, episodes, per-token credit): from this report's folder run \`${viewCommand(view.sources)}\` and open ${VIEW_URL}.`,
    '',
  );
  out.push(
    'Pass@1 in percent with 95% intervals over training seeds and tasks together (two-level bootstrap; ' +
      'docs/decisions/0016-results-statistics-provenance.md). Δ rows: paired differences in points.',
    '',
  );
  for (const t of view.tables) {
    const varied = new Set(t.rows.flatMap((r) => r.cells).flatMap((c) => (isEstimate(c) ? [c.seeds] : []))).size > 1;
    out.push(`## ${t.title}`, '', `_${t.caption}_`, '');
    out.push(`| system | ${t.columns.join(' | ')} |`, `|---|${t.columns.map(() => '---').join('|')}|`);
    for (const r of t.rows)
      out.push(`| ${r.label} | ${r.cells.map((c) => formatCell(c, { seedCounts: varied })).join(' | ')} |`);
    out.push('');
    if (t.notes.length) out.push(...t.notes.map((n) => `- ${n}`), '');
  }
  out.push('## Training curves (Figure 4 analogue)', '');
  for (const f of view.figures)
    out.push(`- ${f.def.title} (\`${f.def.metric}\`): ${f.svg ? `figures/${f.def.id}.svg` : 'not run'}`);
  out.push('', '## Provenance', '', ...provenanceLines(view.provenance), '');
  if (view.provenance.runs.length) {
    out.push('| run | system | code | config hash |', '|---|---|---|---|');
    for (const r of view.provenance.runs)
      out.push(`| \`${r.label}\` | ${r.system} | ${r.version} | \`${r.configHash}\` |`);
  }
  if (view.warnings.length) out.push('', '## Warnings', '', ...view.warnings.map((w) => `- ${w}`));
  return `${out.join('\n')}\n`;
}
