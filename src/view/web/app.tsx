import { useEffect, useState } from 'preact/hooks';
import type { SourcesResponse } from '../api-schema.ts';
import { api } from './api.ts';
import { EpisodesPage } from './episodes-page.tsx';
import { formatRoute, parseRoute, type Route } from './route.ts';
import { RunView } from './run-view.tsx';

function defaultRoute(data: SourcesResponse): Route {
  if (data.sources.some((s) => s.hasMetrics)) return { page: 'runs' };
  const s = data.sources.find((x) => x.iterations.length > 0) ?? data.sources[0]!;
  return { page: 'episodes', source: s.id, iteration: s.iterations[0] ?? 0, episode: 0, mode: 'mask', metric: 'used' };
}

/** The viewer: a run view (curves, evaluations) and an episode view, switched by the URL hash. */
export function App() {
  const [data, setData] = useState<SourcesResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [hash, setHash] = useState(location.hash);

  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    api
      .sources()
      .then(setData)
      .catch((e: unknown) => setError(String(e)));
    return () => removeEventListener('hashchange', on);
  }, []);

  if (error) return <p class="error">Cannot load the runs: {error}</p>;
  if (!data) return <p class="loading">Loading runs…</p>;
  const route = parseRoute(hash) ?? defaultRoute(data);
  const firstEpisodes = defaultRoute({ ...data, sources: data.sources.filter((s) => s.iterations.length > 0) });
  return (
    <div class="app">
      <header class="top">
        <span class="brand">crl view</span>
        <nav>
          <a href="#/runs" class={route.page === 'runs' ? 'active' : ''} data-testid="nav-runs">
            Runs
          </a>
          <a
            href={
              route.page === 'episodes'
                ? formatRoute(route)
                : formatRoute(firstEpisodes.page === 'episodes' ? firstEpisodes : route)
            }
            class={route.page === 'episodes' ? 'active' : ''}
            data-testid="nav-episodes"
          >
            Episodes
          </a>
        </nav>
        <span class="sources">{data.sources.map((s) => s.label).join(' · ')}</span>
      </header>
      {data.warnings.length > 0 && (
        <details class="warnings">
          <summary>{data.warnings.length} warnings</summary>
          <ul>
            {data.warnings.map((w) => (
              <li key={w}>{w}</li>
            ))}
          </ul>
        </details>
      )}
      {route.page === 'runs' ? <RunView data={data} /> : <EpisodesPage data={data} route={route} />}
    </div>
  );
}
