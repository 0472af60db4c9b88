import type { CurvePoint } from './collect-runs.ts';
import { FIGURES, type FigureDef } from './figures.ts';

export { FIGURES, type FigureDef };

/**
 * Training-curve figures (method §8 Figure 4 analogue plus health curves), rendered server-side to
 * inline SVG with vega-lite -> vega (renderer 'none'), so the HTML opens offline with no script.
 * One panel per task family; in each, one line per system: the mean over its training seeds at
 * each iteration, with a band from the lowest to the highest seed (one seed: the line alone).
 */
export interface RenderedFigure {
  def: FigureDef;
  /** Inline SVG, or null when no run logged this metric ("not run"). */
  svg: string | null;
}

export interface BandPoint {
  env: string;
  system: string;
  iteration: number;
  mean: number;
  min: number;
  max: number;
  /** Runs (seeds) with a value at this iteration. */
  n: number;
}

/** Mean, min and max over runs per (env, system, iteration) of one metric; sorted for stable output. */
export function bandPoints(points: readonly CurvePoint[], metric: string): BandPoint[] {
  const groups = new Map<string, { env: string; system: string; iteration: number; values: number[] }>();
  for (const p of points) {
    if (p.metric !== metric) continue;
    const env = p.env ?? '(unknown env)';
    const key = `${env}\u0000${p.system}\u0000${p.iteration}`;
    const g = groups.get(key) ?? { env, system: p.system, iteration: p.iteration, values: [] };
    g.values.push(p.value);
    groups.set(key, g);
  }
  return [...groups.values()]
    .map((g) => ({
      env: g.env,
      system: g.system,
      iteration: g.iteration,
      mean: g.values.reduce((a, b) => a + b, 0) / g.values.length,
      min: Math.min(...g.values),
      max: Math.max(...g.values),
      n: g.values.length,
    }))
    .sort((a, b) => a.env.localeCompare(b.env) || a.system.localeCompare(b.system) || a.iteration - b.iteration);
}

/** Renders one metric: a panel per env, mean line and min-max band per system. */
export async function renderCurve(options: { def: FigureDef; points: readonly CurvePoint[] }): Promise<string | null> {
  const values = bandPoints(options.points, options.def.metric);
  if (values.length === 0) return null;
  // Loaded on first use: every crl command imports this module, few draw figures.
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const seeds = Math.max(...values.map((v) => v.n));
  const x = { field: 'iteration', type: 'quantitative' as const, title: 'iteration' };
  const color = { field: 'system', type: 'nominal' as const };
  const spec = vl.compile({
    title: {
      text: options.def.title,
      subtitle: seeds > 1 ? `mean over up to ${seeds} seeds; band: lowest to highest seed` : 'one seed',
    },
    data: { values },
    facet: { column: { field: 'env', type: 'nominal', title: null } },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 260,
      height: 180,
      layer: [
        {
          mark: { type: 'area', opacity: 0.18 },
          encoding: {
            x,
            y: { field: 'min', type: 'quantitative', title: options.def.metric, scale: { zero: false } },
            y2: { field: 'max' },
            color,
          },
        },
        {
          mark: { type: 'line', point: values.length < 60 },
          encoding: { x, y: { field: 'mean', type: 'quantitative' }, color },
        },
      ],
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
