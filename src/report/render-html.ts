import { formatCell, isEstimate } from './cells.ts';
import { provenanceLines, type ReportView } from './report-view.ts';

/** `crl view`'s default address (src/cli/view-command.ts); written as text: the report stays offline, with no links out. */
export const VIEW_URL = 'http://127.0.0.1:7601/';

/** The command that opens the same runs in `crl view` (the interactive counterpart of this report). */
export function viewCommand(sources: readonly string[]): string {
  return `crl view ${sources.map((s) => (/^[\w./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`)).join(' ')}`;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Inline `code` and **bold** of the provenance lines, escaped. */
function inline(md: string): string {
  return esc(md)
    .replace(/`([^`]*)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]*)\*\*/g, '<b>$1</b>');
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}.notrun{color:#999;font-style:italic}.diff{color:#335}
.notes{color:#555;font-size:.9em}.mixed{color:#a00;font-weight:bold}
.figs{display:flex;flex-wrap:wrap;gap:1em}.fig{border:1px solid #eee;padding:.5em}.caption{color:#555}`;

/**
 * One self-contained HTML file: inline CSS and inline SVG, no scripts and no external references,
 * so it opens offline and can be mailed as one file.
 */
export function renderHtml(view: ReportView): string {
  const parts: string[] = [
    '<!doctype html><html><head><meta charset="utf-8">',
    `<title>${esc(view.title)}</title><style>${STYLE}</style></head><body>`,
    `<h1>${esc(view.title)}</h1>`,
    `<p class="caption">Runs: ${view.sources.map(esc).join(', ')}. Pass@1 in percent with 95% intervals over training seeds and tasks together (two-level bootstrap); Δ rows are paired differences in points.</p>`,
    `<p class="caption" id="crl-view">The same runs in the interactive viewer (zoomable curves, every sampled episode as windows and summaries, per-token credit): from this report's folder run <code>${esc(viewCommand(view.sources))}</code> and open ${VIEW_URL} (docs/viewer.md).</p>`,
  ];
  for (const t of view.tables) {
    const varied = new Set(t.rows.flatMap((r) => r.cells).flatMap((c) => (isEstimate(c) ? [c.seeds] : []))).size > 1;
    parts.push(`<h2 id="${t.id}">${esc(t.title)}</h2><p class="caption">${esc(t.caption)}</p><table>`);
    parts.push(`<tr><th>system</th>${t.columns.map((c) => `<th>${esc(c)}</th>`).join('')}</tr>`);
    for (const r of t.rows) {
      const cells = r.cells
        .map((c) =>
          isEstimate(c)
            ? `<td${c.kind === 'diff' ? ' class="diff"' : ''}>${esc(formatCell(c, { seedCounts: varied }))}</td>`
            : c === 'n/a'
              ? '<td>—</td>'
              : '<td class="notrun">not run</td>',
        )
        .join('');
      parts.push(`<tr><td>${esc(r.label)}</td>${cells}</tr>`);
    }
    parts.push('</table>');
    if (t.notes.length)
      parts.push(
        `<ul class="notes">${t.notes.map((n) => `<li${n.startsWith('MIXED') ? ' class="mixed"' : ''}>${esc(n)}</li>`).join('')}</ul>`,
      );
  }
  parts.push('<h2 id="curves">Training curves (Figure 4 analogue)</h2><div class="figs">');
  for (const f of view.figures) {
    parts.push(
      `<div class="fig" id="fig-${f.def.id}">${f.svg ?? `<p><b>${esc(f.def.title)}</b></p><p class="notrun">not run</p>`}</div>`,
    );
  }
  parts.push('</div>', '<h2 id="provenance">Provenance</h2><ul class="notes">');
  parts.push(...provenanceLines(view.provenance).map((l) => `<li>${inline(l.replace(/^- /, ''))}</li>`), '</ul>');
  if (view.provenance.runs.length) {
    parts.push(
      '<details><summary>every run directory</summary><table><tr><th>run</th><th>system</th><th>code</th><th>config hash</th></tr>',
    );
    for (const r of view.provenance.runs)
      parts.push(
        `<tr><td>${esc(r.label)}</td><td>${esc(r.system)}</td><td>${esc(r.version)}</td><td>${esc(r.configHash)}</td></tr>`,
      );
    parts.push('</table></details>');
  }
  if (view.warnings.length)
    parts.push(`<h2>Warnings</h2><ul>${view.warnings.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>`);
  parts.push('</body></html>');
  return parts.join('\n');
}
