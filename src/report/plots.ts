import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { CurvePoint } from './collect-runs.ts';
import { FIGURES, type FigureDef } from './figures.ts';

export { FIGURES, type FigureDef };

/**
 * Training-curve figures (method §8 Figure 4 analogue plus health curves), rendered server-side to
 * inline SVG with vega-lite -> vega (renderer 'none'), so the HTML opens offline with no script.
 */
export interface RenderedFigure {
  def: FigureDef;
  /** Inline SVG, or null when no run logged this metric ("not run"). */
  svg: string | null;
}

/** Renders one metric's curves (one line per run, colored by system) to SVG. */
export async function renderCurve(options: { def: FigureDef; points: readonly CurvePoint[] }): Promise<string | null> {
  const values = options.points
    .filter((p) => p.metric === options.def.metric)
    .map((p) => ({ iteration: p.iteration, value: p.value, system: p.system, run: p.run }));
  if (values.length === 0) return null;
  const spec = vl.compile({
    width: 360,
    height: 200,
    title: options.def.title,
    data: { values },
    mark: { type: 'line', point: values.length < 60 },
    encoding: {
      x: { field: 'iteration', type: 'quantitative', title: 'iteration' },
      y: { field: 'value', type: 'quantitative', title: options.def.metric, scale: { zero: false } },
      color: { field: 'system', type: 'nominal' },
      detail: { field: 'run', type: 'nominal' },
    },
  }).spec;
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

export async function renderFigures(points: readonly CurvePoint[]): Promise<RenderedFigure[]> {
  const out: RenderedFigure[] = [];
  for (const def of FIGURES) out.push({ def, svg: await renderCurve({ def, points }) });
  return out;
}
