import { useEffect, useMemo, useState } from 'preact/hooks';
import { FIGURES } from '../../report/figures.ts';
import type { EvalRow, MetricsResponse, Source, SourcesResponse } from '../api-schema.ts';
import { api } from './api.ts';
import { CurveChart, type CurvePoint } from './curve-chart.tsx';
import { go } from './route.ts';

/** The sampled iteration nearest to `iteration` (at or before it when there is one). */
function nearestSampled(s: Source, iteration: number): number | null {
  if (s.iterations.length === 0) return null;
  const before = s.iterations.filter((i) => i <= iteration);
  return before.length > 0 ? before[before.length - 1]! : s.iterations[0]!;
}

/**
 * Training curves of the report, interactive: one panel group per task family, the runs to show
 * picked by check boxes, each chart zoomable; a click on a point opens that iteration's episodes.
 */
export function RunView({ data }: { data: SourcesResponse }) {
  const runs = data.sources.filter((s) => s.hasMetrics);
  const [metrics, setMetrics] = useState<Map<number, MetricsResponse>>(new Map());
  const [picked, setPicked] = useState<Set<number>>(new Set(runs.map((r) => r.id)));
  const [extra, setExtra] = useState<string[]>([]);

  useEffect(() => {
    void Promise.all(runs.map((r) => api.metrics(r.id))).then((all) =>
      setMetrics(new Map(all.map((m) => [m.source, m]))),
    );
  }, [data]);

  const families = useMemo(() => [...new Set(runs.map((r) => r.env ?? 'unknown family'))].sort(), [data]);
  const allMetrics = useMemo(
    () => [...new Set([...metrics.values()].flatMap((m) => Object.keys(m.series)))].sort(),
    [metrics],
  );
  const panels = [
    ...FIGURES.map((f) => ({ metric: f.metric, title: f.title })),
    ...extra.map((m) => ({ metric: m, title: m })),
  ];

  const open = (p: CurvePoint) => {
    const s = data.sources[p.source];
    const it = s ? nearestSampled(s, p.iteration) : null;
    if (s && it !== null)
      go({ page: 'episodes', source: s.id, iteration: it, episode: 0, mode: 'credit', metric: 'used' });
  };

  return (
    <main class="runs" data-testid="run-view">
      {runs.length === 0 && <p>No training curves here (no metrics.jsonl): see the Episodes tab.</p>}
      {runs.length > 0 && (
        <section class="picker">
          <b>Runs</b>
          {runs.map((r) => (
            <label key={r.id}>
              <input
                type="checkbox"
                checked={picked.has(r.id)}
                data-testid={`pick-run-${r.id}`}
                onChange={() => {
                  const next = new Set(picked);
                  if (next.has(r.id)) next.delete(r.id);
                  else next.add(r.id);
                  setPicked(next);
                }}
              />
              {r.label}
              {r.reportHref && (
                <a href={r.reportHref} target="_blank" rel="noreferrer" class="report-link">
                  static report
                </a>
              )}
            </label>
          ))}
          <select
            onChange={(e) => {
              const m = (e.target as HTMLSelectElement).value;
              if (m && !panels.some((p) => p.metric === m)) setExtra([...extra, m]);
            }}
          >
            <option value="">add a panel…</option>
            {allMetrics.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
          <span class="hint">
            drag or scroll a chart to zoom, double-click to reset, click a point for its episodes
          </span>
        </section>
      )}
      {families.map((family) => {
        const inFamily = runs.filter((r) => (r.env ?? 'unknown family') === family && picked.has(r.id));
        return (
          <section key={family} class="family" data-testid={`family-${family}`}>
            <h2>{family}</h2>
            <div class="charts">
              {panels.map((p) => {
                const points: CurvePoint[] = inFamily.flatMap((r) =>
                  (metrics.get(r.id)?.series[p.metric] ?? []).map(([iteration, value]) => ({
                    source: r.id,
                    run: r.label,
                    iteration,
                    value,
                  })),
                );
                return points.length === 0 ? null : (
                  <CurveChart
                    key={`${family}-${p.metric}`}
                    title={p.title}
                    metric={p.metric}
                    points={points}
                    onPick={open}
                  />
                );
              })}
            </div>
          </section>
        );
      })}
      <EvalTable rows={data.evals} />
    </main>
  );
}

function pct(x: number): string {
  return (100 * x).toFixed(1);
}

function EvalTable({ rows }: { rows: EvalRow[] }) {
  if (rows.length === 0) return null;
  const modes = [...new Set(rows.flatMap((r) => Object.keys(r.modes)))].sort(
    (a, b) => Number(a.slice(1)) - Number(b.slice(1)),
  );
  return (
    <section class="evals">
      <h2>Evaluations (Pass@1 %, 95% interval)</h2>
      <table data-testid="eval-table">
        <thead>
          <tr>
            <th>system</th>
            <th>env</th>
            <th>variant</th>
            <th>summary writer</th>
            <th>C</th>
            {modes.map((m) => (
              <th key={m}>{m}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              <td>{r.system}</td>
              <td>{r.env}</td>
              <td>{r.variant}</td>
              <td>{r.summaryWriter}</td>
              <td>{r.contextWindow}</td>
              {modes.map((m) => {
                const x = r.modes[m];
                return (
                  <td key={m} class="num">
                    {x ? `${pct(x.passAt1)} [${pct(x.low)}, ${pct(x.high)}]` : '—'}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
