import { useEffect, useState } from 'preact/hooks';
import type { EpisodeListResponse, EpisodeView, SourcesResponse } from '../api-schema.ts';
import { api } from './api.ts';
import { EpisodeDetail } from './episode-detail.tsx';
import { go, type Route } from './route.ts';

type EpisodesRoute = Extract<Route, { page: 'episodes' }>;

/** Left: run, iteration and the episode list; right: the open episode. */
export function EpisodesPage({ data, route }: { data: SourcesResponse; route: EpisodesRoute }) {
  const [list, setList] = useState<EpisodeListResponse | null>(null);
  const [episode, setEpisode] = useState<EpisodeView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const source = data.sources[route.source];

  useEffect(() => {
    setList(null);
    setError(null);
    api
      .episodes(route.source, route.iteration)
      .then(setList)
      .catch((e: unknown) => setError(String(e)));
  }, [route.source, route.iteration]);

  useEffect(() => {
    if (route.episode === null) return setEpisode(null);
    let stale = false;
    api
      .episode(route.source, route.iteration, route.episode)
      .then((e) => {
        if (!stale) setEpisode(e);
      })
      .catch((e: unknown) => setError(String(e)));
    return () => {
      stale = true;
    };
  }, [route.source, route.iteration, route.episode]);

  if (!source) return <p class="error">No source {route.source}.</p>;
  return (
    <main class="episodes">
      <aside class="sidebar">
        <label>
          run{' '}
          <select
            data-testid="pick-source"
            value={route.source}
            onChange={(e) => {
              const s = data.sources[Number((e.target as HTMLSelectElement).value)]!;
              go({ ...route, source: s.id, iteration: s.iterations[0] ?? 0, episode: 0 });
            }}
          >
            {data.sources.map((s) => (
              <option key={s.id} value={s.id} title={s.label}>
                {s.env ? `${s.name} · ${s.env}` : s.name}
              </option>
            ))}
          </select>
        </label>
        {source.kind === 'run' && (
          <label>
            iteration{' '}
            <select
              data-testid="pick-iteration"
              value={route.iteration}
              onChange={(e) => go({ ...route, iteration: Number((e.target as HTMLSelectElement).value), episode: 0 })}
            >
              {source.iterations.map((i) => (
                <option key={i} value={i}>
                  {i}
                </option>
              ))}
            </select>
          </label>
        )}
        {error && <p class="error">{error}</p>}
        <ol class="episode-list" data-testid="episode-list">
          {list?.episodes.map((e) => (
            <li key={e.index}>
              <a
                href={`#/episodes/${route.source}/${route.iteration}/${e.index}${route.mode === 'credit' ? `?mode=credit&metric=${route.metric}` : ''}`}
                class={e.index === route.episode ? 'active' : ''}
                data-episode={e.index}
              >
                <span class={`outcome ${e.outcome}`}>{e.outcome}</span> {e.episodeId}
                <span class="mini-timeline">
                  {e.segments.map((s, i) => (
                    <i key={i} class={s.kind} style={{ flexGrow: s.kind === 'summary' ? 0.3 : s.tokens }} />
                  ))}
                </span>
                <small>
                  R {e.reward} · {e.compactions} compactions · {e.generatedTokens} generated
                </small>
              </a>
            </li>
          ))}
        </ol>
      </aside>
      <section class="detail">
        {episode &&
        episode.index === route.episode &&
        episode.source === route.source &&
        episode.iteration === route.iteration ? (
          <EpisodeDetail episode={episode} route={route} />
        ) : (
          route.episode !== null && <p class="loading">Loading episode…</p>
        )}
      </section>
    </main>
  );
}
