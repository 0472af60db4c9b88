import { useEffect, useRef } from 'preact/hooks';
import type { Result } from 'vega-embed';

export interface CurvePoint {
  source: number;
  /** The legend's name for the run (system and seed). */
  run: string;
  iteration: number;
  value: number;
}

/** The chart's named data set: new points go into it in place, so a live run's chart keeps its zoom. */
const DATA = 'points';

/**
 * One training curve, interactive, with vega-embed (SVG renderer). The x scale is bound to an
 * interval selection, so drag pans and the wheel zooms; double-click resets. vega evaluates its
 * expressions with vega-interpreter, so the page needs no 'unsafe-eval'. vega loads as its own
 * chunk on the first chart, so the episode view never waits for it. The chart is built once per
 * metric; later points (a run still training, a run picked or dropped) replace its data set.
 */
export function CurveChart(props: {
  title: string;
  metric: string;
  points: CurvePoint[];
  onPick: (p: CurvePoint) => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const view = useRef<Result['view'] | null>(null);
  const latest = useRef(props.points);
  latest.current = props.points;
  const onPick = useRef(props.onPick);
  onPick.current = props.onPick;

  const show = async (points: CurvePoint[]) => {
    const v = view.current;
    if (!v) return;
    await v.data(DATA, points).runAsync();
    if (ref.current && view.current === v) ref.current.dataset.drawn = String(points.length);
  };

  useEffect(() => {
    let finalize: (() => void) | null = null;
    let cancelled = false;
    void (async () => {
      const [{ default: embed }, { expressionInterpreter }] = await Promise.all([
        import('vega-embed'),
        import('vega-interpreter'),
      ]);
      if (cancelled || !ref.current) return;
      const result = await embed(
        ref.current,
        {
          $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
          width: 340,
          height: 180,
          // Its data comes after the first layout: let axes and legend resize the chart as it grows.
          autosize: { type: 'pad', resize: true },
          title: props.title,
          data: { name: DATA },
          params: [{ name: 'zoom', select: { type: 'interval', encodings: ['x'] }, bind: 'scales' }],
          mark: { type: 'line', point: { size: 30 }, tooltip: true, clip: true }, // zoomed: nothing past the axes
          encoding: {
            x: { field: 'iteration', type: 'quantitative', title: 'iteration' },
            y: { field: 'value', type: 'quantitative', title: props.metric, scale: { zero: false } },
            // The whole name: a cut legend label is what made runs indistinguishable. Colours in
            // source order (ids only grow), so a run that appears later takes the next colour and
            // every other run keeps its own.
            color: {
              field: 'run',
              type: 'nominal',
              sort: { field: 'source', op: 'min' },
              legend: { orient: 'bottom', title: null, labelLimit: 0, columns: 2 },
            },
          },
        },
        { renderer: 'svg', actions: false, ast: true, expr: expressionInterpreter },
      );
      finalize = () => result.finalize();
      if (cancelled) return finalize();
      result.view.addEventListener('click', (_event, item) => {
        const d = (item as { datum?: Partial<CurvePoint> } | null | undefined)?.datum;
        if (d && typeof d.source === 'number' && typeof d.iteration === 'number') onPick.current(d as CurvePoint);
      });
      view.current = result.view;
      await show(latest.current);
    })();
    return () => {
      cancelled = true;
      view.current = null;
      finalize?.();
    };
  }, [props.title, props.metric]);

  useEffect(() => {
    void show(props.points);
  }, [props.points]);

  return <div class="chart" data-testid="curve" data-metric={props.metric} ref={ref} />;
}
