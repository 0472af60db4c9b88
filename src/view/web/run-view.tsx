import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { FIGURES } from '../../report/figures.ts';
import type { MetricsResponse, Source, SourcesResponse } from '../api-schema.ts';
import { api } from './api.ts';
import { CurveChart, type CurvePoint } from './curve-chart.tsx';
import { EvalTable } from './eval-table.tsx';
import { go } from './route.ts';
import { RunPicker, type Layout } from './run-picker.tsx';

/** The sampled iteration nearest to `iteration` (at or before it when there is one). */
function nearestSampled(s: Source, iteration: number): number | null {
  if (s.iterations.length === 0) return null;
  const before = s.iterations.filter((i) => i <= iteration);
  return before.length > 0 ? before[before.length - 1]! : s.iterations[0]!;
}

const UNKNOWN_FAMILY = 'unknown family';

/**
 * Training curves of the report, interactive: the runs to show picked by directory or one by one,
 * laid out per task family or all on one chart, each chart zoomable; a click on a point opens that
 * iteration's episodes. A run's curves are fetched again when the server says they changed (its
 * `version`), so a run still training grows on the page.
 */
export function RunView({ data }: { data: SourcesResponse }) {
  const runs = data.sources.filter((s) => s.hasMetrics);
  const [metrics, setMetrics] = useState<ReadonlyMap<number, MetricsResponse>>(new Map());
  const [picked, setPicked] = useState<Set<number>>(new Set(runs.map((r) => r.id)));
  const [layout, setLayout] = useState<Layout>('by-family');
  const [extra, setExtra] = useState<string[]>([]);
  const fetched = useRef(new Map<number, string>()); // run id -> the version its curves were fetched at
  const seen = useRef(new Set(runs.map((r) => r.id)));

  useEffect(() => {
    // Runs a pipeline started since the page loaded are shown like the others.
    const fresh = runs.filter((r) => !seen.current.has(r.id));
    if (fresh.length > 0) {
      for (const r of fresh) seen.current.add(r.id);
      setPicked((p) => new Set([...p, ...fresh.map((r) => r.id)]));
    }
    const stale = runs.filter((r) => fetched.current.get(r.id) !== r.version);
    if (stale.length === 0) return;
    for (const r of stale) fetched.current.set(r.id, r.version);
    void Promise.all(stale.map((r) => api.metrics(r.id))).then((all) =>
      setMetrics((prev) => new Map([...prev, ...all.map((m) => [m.source, m] as const)])),
    );
  }, [data]);

  const allMetrics = useMemo(
    () => [...new Set([...metrics.values()].flatMap((m) => Object.keys(m.series)))].sort(),
    [metrics],
  );
  const panels = useMemo(
    () => [
      ...FIGURES.map((f) => ({ metric: f.metric, title: f.title })),
      ...extra.map((m) => ({ metric: m, title: m })),
    ],
    [extra],
  );

  // One chart group per family, or one for every picked run; each panel's points in legend names.
  const groups = useMemo(() => {
    const shown = runs.filter((r) => picked.has(r.id));
    const familyOf = (r: Source) => r.env ?? UNKNOWN_FAMILY;
    const families = [...new Set(runs.map(familyOf))].sort();
    const mixed = new Set(shown.map(familyOf)).size > 1;
    const sets =
      layout === 'overlay'
        ? [
            {
              key: 'all',
              title: 'every picked run',
              runs: shown,
              name: (r: Source) => (mixed ? `${r.name} · ${familyOf(r)}` : r.name),
            },
          ]
        : families.map((f) => ({
            key: f,
            title: f,
            runs: shown.filter((r) => familyOf(r) === f),
            name: (r: Source) => r.name,
          }));
    return sets.map((set) => ({
      ...set,
      panels: panels.map((p) => ({
        ...p,
        points: set.runs.flatMap((r) =>
          (metrics.get(r.id)?.series[p.metric] ?? []).map(([iteration, value]): CurvePoint => ({
            source: r.id,
            run: set.name(r),
            iteration,
            value,
          })),
        ),
      })),
    }));
  }, [data, metrics, picked, layout, panels]);

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
        <RunPicker
          runs={runs}
          picked={picked}
          onPick={setPicked}
          layout={layout}
          onLayout={setLayout}
          metrics={allMetrics}
          onAddPanel={(m) => {
            if (!panels.some((p) => p.metric === m)) setExtra([...extra, m]);
          }}
        />
      )}
      {groups.map((g) => (
        <section key={g.key} class="family" data-testid={`family-${g.key}`}>
          <h2>{g.title}</h2>
          <div class="charts">
            {g.panels.map((p) =>
              p.points.length === 0 ? null : (
                <CurveChart
                  key={`${g.key}-${p.metric}`}
                  title={p.title}
                  metric={p.metric}
                  points={p.points}
                  onPick={open}
                />
              ),
            )}
          </div>
        </section>
      ))}
      <EvalTable rows={data.evals} />
    </main>
  );
}
