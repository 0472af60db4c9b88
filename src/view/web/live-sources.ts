import { useEffect, useState } from 'preact/hooks';
import type { SourcesResponse } from '../api-schema.ts';
import { api } from './api.ts';

/** How often the page asks the server what changed: a run still training shows up within this. */
export const LIVE_POLL_MS = 2000;

/**
 * The server's sources, asked for again every LIVE_POLL_MS, so a run that is still training (or a
 * pipeline that starts its next run) shows its new iterations without a reload. The state only
 * changes when the answer does: an idle run costs one small request per poll and no redraw.
 */
export function useLiveSources(): { data: SourcesResponse | null; error: string | null; checkedAt: Date | null } {
  const [data, setData] = useState<SourcesResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [checkedAt, setCheckedAt] = useState<Date | null>(null);
  useEffect(() => {
    let last = '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const poll = async () => {
      try {
        const next = await api.sources();
        const text = JSON.stringify(next);
        if (text !== last) {
          last = text;
          setData(next);
        }
        setError(null);
        setCheckedAt(new Date());
      } catch (e) {
        setError(String(e)); // the server stopped, say so; the page keeps what it has
      }
      if (!stopped) timer = setTimeout(() => void poll(), LIVE_POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);
  return { data, error, checkedAt };
}
