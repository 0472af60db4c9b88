import type { CreditMetric } from './credit-scale.ts';

/** The app's state in the URL hash, so every view can be linked and reloaded. */
export type Route =
  | { page: 'runs' }
  | {
      page: 'episodes';
      source: number;
      iteration: number;
      episode: number | null;
      mode: 'mask' | 'credit';
      metric: CreditMetric;
    };

export function parseRoute(hash: string): Route | null {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter((p) => p !== '');
  if (parts[0] === 'runs') return { page: 'runs' };
  if (parts[0] === 'episodes' && parts.length >= 3) {
    const q = new URLSearchParams(query);
    const nums = parts.slice(1, 4).map(Number);
    if (nums.some((n) => !Number.isInteger(n) || n < 0)) return null;
    return {
      page: 'episodes',
      source: nums[0]!,
      iteration: nums[1]!,
      episode: nums[2] ?? null,
      mode: q.get('mode') === 'credit' ? 'credit' : 'mask',
      metric: (q.get('metric') as CreditMetric | null) ?? 'used',
    };
  }
  return null;
}

export function formatRoute(r: Route): string {
  if (r.page === 'runs') return '#/runs';
  const ep = r.episode === null ? '' : `/${r.episode}`;
  const q = r.mode === 'credit' ? `?mode=credit&metric=${r.metric}` : '';
  return `#/episodes/${r.source}/${r.iteration}${ep}${q}`;
}

export function go(r: Route): void {
  location.hash = formatRoute(r);
}
