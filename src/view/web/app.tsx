import { useEffect, useState } from 'preact/hooks';
import type { SourcesResponse } from '../api-schema.ts';
import { EpisodesPage } from './episodes-page.tsx';
import { useLiveSources } from './live-sources.ts';
import { formatRoute, parseRoute, type Route } from './route.ts';
import { RunView } from './run-view.tsx';

/** The first episode of the first source that has any (or of the first source). */
function firstEpisodes(data: SourcesResponse): Route {
  const s = data.sources.find((x) => x.iterations.length > 0) ?? data.sources[0];
  if (!s) return { page: 'runs' };
  const iteration = s.iterations[s.iterations.length - 1] ?? 0; // the newest: what a user looks at first
  return { page: 'episodes', source: s.id, iteration, episode: 0, mode: 'mask', metric: 'used' };
}

function defaultRoute(data: SourcesResponse): Route {
  return data.sources.some((s) => s.hasMetrics) ? { page: 'runs' } : firstEpisodes(data);
}

/** The viewer: a run view (curves, evaluations) and an episode view, switched by the URL hash. */
export function App() {
  const { data, error, checkedAt } = useLiveSources();
  const [hash, setHash] = useState(location.hash);

  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);

  if (!data) return error ? <p class="error">Cannot load the runs: {error}</p> : <p class="loading">Loading runs…</p>;
  const route = parseRoute(hash) ?? defaultRoute(data);
  const episodesHref = formatRoute(route.page === 'episodes' ? route : firstEpisodes(data));
  return (
    <div class="app">
      <header class="top">
        <span class="brand">crl view</span>
        <nav>
          <a href="#/runs" class={route.page === 'runs' ? 'active' : ''} data-testid="nav-runs">
            Runs
          </a>
          <a href={episodesHref} class={route.page === 'episodes' ? 'active' : ''} data-testid="nav-episodes">
            Episodes
          </a>
        </nav>
        <span class="sources" title={data.sources.map((s) => s.label).join('\n')}>
          {[...new Set(data.sources.map((s) => s.group))].join(' · ')}
        </span>
        <span class={error ? 'live error' : 'live'} data-testid="live">
          {error
            ? `not refreshing: ${error}`
            : `live: checked ${checkedAt?.toLocaleTimeString() ?? ''}, new iterations appear on their own`}
        </span>
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
