import type { z } from 'zod';
import {
  EpisodeListResponseSchema,
  EpisodeViewSchema,
  MetricsResponseSchema,
  SourcesResponseSchema,
} from '../api-schema.ts';

/** GET a JSON endpoint and parse it with its schema (house style: zod at every boundary). */
async function get<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
  const res = await fetch(path);
  const body: unknown = await res.json();
  if (!res.ok) {
    const error = (body as { error?: unknown }).error;
    throw new Error(typeof error === 'string' ? error : `${path}: HTTP ${res.status}`);
  }
  return schema.parse(body);
}

export const api = {
  sources: () => get('/api/sources', SourcesResponseSchema),
  metrics: (source: number) => get(`/api/sources/${source}/metrics`, MetricsResponseSchema),
  episodes: (source: number, iteration: number) =>
    get(`/api/sources/${source}/iterations/${iteration}`, EpisodeListResponseSchema),
  episode: (source: number, iteration: number, index: number) =>
    get(`/api/sources/${source}/iterations/${iteration}/episodes/${index}`, EpisodeViewSchema),
};
