import { getWeightVersion } from './engine-weights.ts';
import { isTimeout } from './replica-answers.ts';
import { acceptsVersion, type WantedVersion } from './wanted-version.ts';

/** What the pool knows of one replica (shown in progress lines and errors). */
export interface ReplicaHealth {
  url: string;
  up: boolean;
  /** The weights it serves, as it last reported them; null: unknown or not reported. */
  weightVersion: string | null;
  inFlight: number;
  lastError?: string;
}

export interface Replica extends ReplicaHealth {
  endpoint: URL;
  /** Episodes that stick to it now. */
  episodes: number;
  /** When it was last probed (ms): a down replica is probed at most once per probe interval. */
  probedAt: number;
  probing: boolean;
  /** Non-busy 5xx answers in a row (replica-answers.ts). */
  failures: number;
  /** It answered, and reports no weight version (an engine without SGLang's get_weight_version, e.g. vLLM). */
  unversioned: boolean;
}

/**
 * How a replica is asked which weights it serves: SGLang's get_weight_version (null there: an
 * engine that reports none, "unversioned"), or under adapter pushes the newest of the trainer's
 * adapters it lists (adapter-publish.ts; null there: none of ours, so not usable, never "unversioned").
 */
export interface VersionReader {
  read(url: string, timeoutMs: number): Promise<string | null>;
  nullIsUnversioned: boolean;
}

const WEIGHT_VERSION_READER: VersionReader = {
  read: (url, timeoutMs) => getWeightVersion({ url, timeoutMs }),
  nullIsUnversioned: true,
};

/**
 * Which replica serves a request (engine-pool.ts holds what is sent to it): the replicas' state as
 * their answers and probes report it, the episodes that stick to each, and the choice among those
 * that serve the weights asked for. Kept apart from the requests themselves so that the choice
 * reads as one rule: the episode's own replica while it can serve, else the least loaded.
 */
export class ReplicaSet {
  readonly replicas: Replica[];
  private readonly sticky = new Map<string, Replica>();
  private reader: VersionReader = WEIGHT_VERSION_READER;

  constructor(
    endpoints: readonly { url: string; endpoint: URL }[],
    private readonly options: {
      probeMs: number;
      /** One probe's limit (ms). */
      probeTimeoutMs: number;
      acceptUnversioned: boolean;
      log?: (line: string) => void;
    },
  ) {
    this.replicas = endpoints.map(({ url, endpoint }) => ({
      url,
      endpoint,
      up: true,
      weightVersion: null,
      inFlight: 0,
      episodes: 0,
      probedAt: 0,
      probing: false,
      failures: 0,
      unversioned: false,
    }));
  }

  health(): ReplicaHealth[] {
    return this.replicas.map(({ url, up, weightVersion, inFlight, lastError }) => ({
      url,
      up,
      weightVersion,
      inFlight,
      ...(lastError !== undefined ? { lastError } : {}),
    }));
  }

  /** One line for progress output: `2/2 up (v3, v3)`. */
  describe(): string {
    const up = this.replicas.filter((r) => r.up).length;
    const each = this.replicas
      .map((r) => (!r.up ? 'down' : r.unversioned ? 'unversioned' : `v${r.weightVersion ?? '?'}`))
      .join(', ');
    return `${up}/${this.replicas.length} up (${each})`;
  }

  /** The replica an episode's requests go to now (undefined before its first request). */
  replicaOf(episodeId: string): string | undefined {
    return this.sticky.get(episodeId)?.url;
  }

  /** The episode ended: its replica's slot is free for the next one. */
  forget(episodeId: string): void {
    const r = this.sticky.get(episodeId);
    if (!r) return;
    r.episodes--;
    this.sticky.delete(episodeId);
  }

  /** From now on replicas are asked their version this way (the pool switched to adapter pushes). */
  useReader(reader: VersionReader): void {
    this.reader = reader;
  }

  /** Whether `r` may answer a request for `version` now. */
  private usable(r: Replica, version: WantedVersion | undefined): boolean {
    return (
      r.up &&
      (version === undefined ||
        acceptsVersion(version, r.weightVersion) ||
        (r.unversioned && this.options.acceptUnversioned))
    );
  }

  /**
   * The episode's replica if it can serve `version`, else the least-loaded one that can (fewest
   * requests in flight, then fewest episodes), which the episode then sticks to; undefined when
   * none can now.
   */
  choose(episodeId: string | undefined, version: WantedVersion | undefined): Replica | undefined {
    const stuck = episodeId === undefined ? undefined : this.sticky.get(episodeId);
    if (stuck && this.usable(stuck, version)) return stuck;
    const candidates = this.replicas.filter((r) => this.usable(r, version));
    if (candidates.length === 0) return undefined;
    const best = candidates.reduce((a, b) =>
      b.inFlight < a.inFlight || (b.inFlight === a.inFlight && b.episodes < a.episodes) ? b : a,
    );
    if (episodeId !== undefined) {
      if (stuck) stuck.episodes--;
      best.episodes++;
      this.sticky.set(episodeId, best);
    }
    return best;
  }

  /** Asks every replica not probed within the interval which weights it serves; one that answers is up. */
  async probeAll(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      this.replicas
        .filter((r) => !r.probing && now - r.probedAt >= this.options.probeMs)
        .map(async (r) => {
          r.probedAt = now;
          r.probing = true;
          try {
            const v = await this.reader.read(r.url, this.options.probeTimeoutMs);
            this.markUp(r, v);
          } catch (e) {
            // Only a refused or broken connection takes a replica out from a probe: one that is
            // slow to answer (a long batch) or answers an error is still serving.
            const gone = /cannot reach the engine/.test((e as Error).message) && !isTimeout(e);
            if (r.up && gone) this.markDown(r, (e as Error).message);
            else r.lastError = (e as Error).message;
          } finally {
            r.probing = false;
          }
        }),
    );
  }

  /** It answered and reports `version` (null: none, an unversioned engine). */
  markUp(r: Replica, version: string | null): void {
    if (!r.up) this.options.log?.(`engine ${r.url} is back (weight version ${version ?? 'not reported'})`);
    r.up = true;
    r.weightVersion = version;
    r.unversioned = version === null && this.reader.nullIsUnversioned;
    delete r.lastError;
  }

  markDown(r: Replica, why: string): void {
    if (r.up) this.options.log?.(`engine ${r.url} stopped answering (${why}); its requests go to the other replicas`);
    r.up = false;
    r.lastError = why;
    r.probedAt = Date.now();
  }
}
