import type { Source } from '../api-schema.ts';

/** How the picked runs are laid out: a chart group per task family, or all of them on each chart. */
export type Layout = 'by-family' | 'overlay';

/**
 * Which runs the curves show: the runs grouped by the directory they were given in (a pipeline's
 * systems and seeds together), each group checked or cleared at once, each run by its legend
 * name; and whether the picked runs share one chart per metric.
 */
export function RunPicker(props: {
  runs: Source[];
  picked: ReadonlySet<number>;
  onPick: (next: Set<number>) => void;
  layout: Layout;
  onLayout: (l: Layout) => void;
  metrics: string[];
  onAddPanel: (metric: string) => void;
}) {
  const { runs, picked } = props;
  const groups = [...new Set(runs.map((r) => r.group))];
  const toggle = (ids: number[], on: boolean) => {
    const next = new Set(picked);
    for (const id of ids) {
      if (on) next.add(id);
      else next.delete(id);
    }
    props.onPick(next);
  };
  return (
    <section class="picker" data-testid="run-picker">
      {groups.map((group) => {
        const inGroup = runs.filter((r) => r.group === group);
        const ids = inGroup.map((r) => r.id);
        const all = ids.every((id) => picked.has(id));
        const some = ids.some((id) => picked.has(id));
        return (
          <fieldset key={group} class="run-group">
            <legend>
              <label title="show or hide every run of this directory">
                <input
                  type="checkbox"
                  checked={all}
                  ref={(el) => {
                    if (el) el.indeterminate = some && !all;
                  }}
                  data-testid={`pick-group-${group}`}
                  onChange={() => toggle(ids, !all)}
                />
                {group}
              </label>
            </legend>
            {inGroup.map((r) => (
              <label key={r.id} title={r.label}>
                <input
                  type="checkbox"
                  checked={picked.has(r.id)}
                  data-testid={`pick-run-${r.id}`}
                  onChange={() => toggle([r.id], !picked.has(r.id))}
                />
                {r.name}
                {r.env && <span class="run-env">{r.env}</span>}
                {r.reportHref && (
                  <a href={r.reportHref} target="_blank" rel="noreferrer" class="report-link">
                    static report
                  </a>
                )}
              </label>
            ))}
          </fieldset>
        );
      })}
      <div class="picker-tools">
        <button
          type="button"
          data-testid="pick-all"
          onClick={() =>
            toggle(
              runs.map((r) => r.id),
              true,
            )
          }
        >
          all
        </button>
        <button
          type="button"
          data-testid="pick-none"
          onClick={() =>
            toggle(
              runs.map((r) => r.id),
              false,
            )
          }
        >
          none
        </button>
        <select
          data-testid="layout"
          value={props.layout}
          onChange={(e) => props.onLayout((e.target as HTMLSelectElement).value as Layout)}
        >
          <option value="by-family">charts per task family</option>
          <option value="overlay">every picked run on one chart</option>
        </select>
        <select
          data-testid="add-panel"
          value=""
          onChange={(e) => {
            const m = (e.target as HTMLSelectElement).value;
            if (m) props.onAddPanel(m);
          }}
        >
          <option value="">add a panel…</option>
          {props.metrics.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <span class="hint">drag or scroll a chart to zoom, double-click to reset, click a point for its episodes</span>
      </div>
    </section>
  );
}
