import { useEffect, useRef } from 'preact/hooks';

export interface CurvePoint {
  source: number;
  run: string;
  iteration: number;
  value: number;
}

/**
 * One training curve, interactive, with vega-embed (SVG renderer). The x scale is bound to an
 * interval selection, so drag pans and the wheel zooms; double-click resets. vega evaluates its
 * expressions with vega-interpreter, so the page needs no 'unsafe-eval'. vega loads as its own
 * chunk on the first chart, so the episode view never waits for it.
 */
export function CurveChart(props: {
  title: string;
  metric: string;
  points: CurvePoint[];
  onPick: (p: CurvePoint) => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
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
          title: props.title,
          data: { values: props.points },
          params: [{ name: 'zoom', select: { type: 'interval', encodings: ['x'] }, bind: 'scales' }],
          mark: { type: 'line', point: { size: 30 }, tooltip: true },
          encoding: {
            x: { field: 'iteration', type: 'quantitative', title: 'iteration' },
            y: { field: 'value', type: 'quantitative', title: props.metric, scale: { zero: false } },
            color: { field: 'run', type: 'nominal', legend: { orient: 'bottom', title: null } },
          },
        },
        { renderer: 'svg', actions: false, ast: true, expr: expressionInterpreter },
      );
      finalize = () => result.finalize();
      if (cancelled) return finalize();
      result.view.addEventListener('click', (_event, item) => {
        const d = (item as { datum?: Partial<CurvePoint> } | null | undefined)?.datum;
        if (d && typeof d.source === 'number' && typeof d.iteration === 'number') props.onPick(d as CurvePoint);
      });
      ref.current.dataset.drawn = String(props.points.length);
    })();
    return () => {
      cancelled = true;
      finalize?.();
    };
  }, [props.points, props.title, props.metric]);
  return <div class="chart" data-testid="curve" data-metric={props.metric} ref={ref} />;
}
