import { randomBytes } from 'node:crypto';
import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from '../contracts/index.ts';
import { publishAdapterToSet, type AdapterPush } from './adapter-publish.ts';
import { publishWeightsToSet, unversionedRefusal } from './weights-publish.ts';
import { adapterName } from './engine-lora.ts';
import { postOnce } from './engine-http.ts';
import { engineProtocol, withRequestSeed, type EngineProtocolName } from './engine-protocols.ts';
import { EngineError, EngineFault, sampleEach } from './engine-error.ts';
import { acceptsVersion, describeWanted, versionNumber, type WantedVersion } from './wanted-version.ts';
import { FAILURE_BACKOFF_MS, judgeAnswer, REPEATED_FAILURES, sleep } from './replica-answers.ts';
import { ReplicaSet, type Replica, type ReplicaHealth } from './replica-set.ts';

export type { ReplicaHealth } from './replica-set.ts';

export interface EnginePoolOptions {
  /** Base URLs of the replicas, e.g. the ready lines of several `crl serve` processes. */
  urls: readonly string[];
  protocol?: EngineProtocolName;
  /** One HTTP request's limit (ms, default 120 s). */
  timeoutMs?: number;
  /** How long a request waits for a usable replica before it fails (ms, default 60 s). */
  waitMs?: number;
  /** Down or stale replicas are probed at most this often (ms, default 500). */
  probeMs?: number;
  /**
   * Use a replica that reports no weight version (an engine without the endpoint) for requests
   * that ask for one. Off by default: its weights cannot be known to be the ones asked for.
   */
  acceptUnversioned?: boolean;
  log?: (line: string) => void;
}

/**
 * Several engine replicas behind one TokenSampler (docs/distributed.md). The requests of one
 * episode (SampleRequest.episodeId) stick to one replica, which keeps its prefix cache warm; an
 * episode's first request goes to the least-loaded live replica (fewest requests in flight, then
 * fewest episodes), as verl's agent loop and slime's router do. A replica that stops answering is
 * taken out and the request is retried on another (the episode moves with it); a down replica is
 * probed again and taken back in once it answers. A sampler that asks for a weight version uses
 * only replicas that serve it (SGLang's weight_version), so no segment is sampled by stale
 * weights: a replica restarted with old weights serves nothing until the next publish reaches it,
 * and one that reports no version serves such requests only with `acceptUnversioned`. A replica
 * that answers "busy" (503 with Retry-After) stays in: the request waits and goes again
 * (replica-answers.ts); a probe never takes out a replica for answering slowly.
 */
export class EnginePool {
  private readonly set: ReplicaSet;
  private readonly protocolName: EngineProtocolName;
  private readonly timeoutMs: number;
  private readonly waitMs: number;
  private readonly probeMs: number;
  /** The version the last publish loaded; a sampler without its own asks for this one. */
  private published: string | undefined;
  /** Busy answers waited out since the last takeBusyWaits(). */
  private busyWaits = 0;
  /**
   * A replica took weights or answered a request: from then on a request no replica answers in
   * time is an engine fault of its episode (EngineFault); before, the URLs are wrong (EngineError).
   */
  private served = false;
  /**
   * Set by the first adapter push the replicas took (publishAdapter): every request then names
   * the adapter of the version it wants, `crl-<tag>-v<version>`; null: merged weights.
   */
  private adapterTag: string | null = null;

  constructor(private readonly options: EnginePoolOptions) {
    if (options.urls.length === 0) throw new EngineError('an engine pool needs at least one engine URL');
    this.protocolName = options.protocol ?? 'sglang';
    const protocol = engineProtocol(this.protocolName);
    const endpoints = options.urls.map((url) => {
      try {
        return { url, endpoint: new URL(protocol.path, url) };
      } catch {
        throw new EngineError(`engine URL ${JSON.stringify(url)} is not a URL; expected e.g. http://127.0.0.1:30000`);
      }
    });
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.waitMs = options.waitMs ?? 60_000;
    this.probeMs = options.probeMs ?? 500;
    this.set = new ReplicaSet(endpoints, {
      probeMs: this.probeMs,
      probeTimeoutMs: Math.min(5_000, this.timeoutMs),
      acceptUnversioned: options.acceptUnversioned === true,
      ...(options.log ? { log: options.log } : {}),
    });
  }

  health(): ReplicaHealth[] {
    return this.set.health();
  }

  /** Asks every replica not probed within the probe interval which weights it serves now. */
  async refresh(): Promise<void> {
    await this.set.probeAll();
  }

  /** One line for progress output: `2/2 up (v3, v3)`. */
  describe(): string {
    return this.set.describe();
  }

  /**
   * A sampler over the pool. `weightVersion`: only replicas serving it answer (default: the
   * version the last publish loaded, if any). `atLeastVersion`: replicas serving that version or
   * a newer one answer, the floor read on every attempt (a rollout worker of an asynchronous
   * trainer, docs/async.md); it wins over `weightVersion`. `seed`: each request that names its
   * episode carries its own seed (engine-protocols.ts withRequestSeed), for engines that honour it.
   */
  sampler(options: { weightVersion?: string; atLeastVersion?: () => number; seed?: number } = {}): TokenSampler {
    const wanted = (): WantedVersion | undefined => {
      if (options.atLeastVersion) return { atLeast: options.atLeastVersion() };
      // Without a version of its own, each attempt asks for the latest published one: a request
      // waiting out a publish (an asynchronous trainer pushes weights while episodes run,
      // docs/async.md) then takes the new weights instead of waiting for the old ones forever.
      const exact = options.weightVersion ?? this.published;
      return exact === undefined ? undefined : { exact };
    };
    return {
      sample: (requests: readonly SampleRequest[], params: SamplingParams) =>
        sampleEach(requests, (r) => this.one(withRequestSeed(options.seed, r), params, wanted)),
    };
  }

  /** Busy answers (503 with Retry-After) waited out since the last call: the metrics' engine waits. */
  takeBusyWaits(): number {
    const n = this.busyWaits;
    this.busyWaits = 0;
    return n;
  }

  /** The replica an episode's requests go to now (undefined before its first request). */
  replicaOf(episodeId: string): string | undefined {
    return this.set.replicaOf(episodeId);
  }

  /** The episode ended: its replica's slot is free for the next one. */
  forget(episodeId: string): void {
    this.set.forget(episodeId);
  }

  /**
   * Loads a checkpoint directory into every replica that answers, labelled `version` (method §6
   * "publish new weights"), then asks each which version it serves: a replica is counted as
   * serving `version` only when it says so. A replica that cannot be reached is taken out (the
   * next publish tries it again); one that answers with an error (wrong token, refused path)
   * fails the publish, since it would never take weights, and so does one that reports no
   * version unless `acceptUnversioned`. Throws when no replica took them.
   */
  async publish(options: { modelPath: string; version: string; token?: string }): Promise<void> {
    await publishWeightsToSet(this.set, {
      ...options,
      acceptUnversioned: this.options.acceptUnversioned === true,
      timeoutMs: Math.min(30_000, this.timeoutMs),
    });
    this.published = options.version;
    this.served = true;
  }

  /**
   * Loads a LoRA adapter directory into every replica that answers, named for `version`
   * (vLLM's /v1/load_lora_adapter, engine-lora.ts), in place of publish()'s merged weights: from
   * then on every request names the adapter of the version it wants, so no stale adapter answers
   * it. The first push decides: when a replica has no adapter API, or refuses the adapter, it
   * returns why (having unloaded it where it was taken) if `fallback`, and the caller publishes
   * merged weights instead; otherwise it throws, as every later push does.
   */
  async publishAdapter(o: {
    path: string;
    version: string;
    token?: string;
    fallback: boolean;
  }): Promise<string | null> {
    const push: AdapterPush = {
      tag: this.adapterTag ?? randomBytes(4).toString('hex'),
      version: o.version,
      path: o.path,
      ...(versionNumber(this.published) !== null ? { keep: versionNumber(this.published)! } : {}),
      ...(o.token ? { token: o.token } : {}),
      timeoutMs: Math.max(this.timeoutMs, 30_000),
    };
    const why = await publishAdapterToSet(this.set, push, { first: this.adapterTag === null, fallback: o.fallback });
    if (why !== null) return why;
    this.adapterTag = push.tag;
    this.published = o.version;
    this.served = true;
    return null;
  }

  private async one(
    request: SampleRequest,
    params: SamplingParams,
    versionNow: () => WantedVersion | undefined,
  ): Promise<SampleResult> {
    const protocol = engineProtocol(this.protocolName);
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const r = await this.pick(request.episodeId, versionNow, deadline);
      const version = versionNow();
      // Under adapter pushes the request names its version's adapter, read on every attempt.
      const adapter =
        this.adapterTag !== null && version !== undefined && 'exact' in version
          ? adapterName(this.adapterTag, version.exact)
          : undefined;
      const body = protocol.requestBody({ request, params, ...(adapter ? { adapter } : {}) });
      r.inFlight++;
      let answer;
      try {
        answer = await postOnce(r.endpoint, body, this.timeoutMs);
      } finally {
        r.inFlight--;
      }
      if (adapter !== undefined && answer.kind === 'http' && answer.status === 404) {
        // The replica no longer holds that adapter (restarted, or unloaded under a slow request):
        // it serves no request until a probe finds the adapter listed again or the next push.
        r.weightVersion = null;
        continue;
      }
      const verdict = judgeAnswer(answer);
      if (verdict.kind === 'busy') {
        // Alive and full: wait as it asked, within this request's deadline, and ask again.
        this.busyWaits++;
        const left = deadline - Date.now();
        if (left <= 0)
          throw new EngineFault(
            `${r.url} stayed busy (HTTP 503) for ${Math.round(this.waitMs / 1000)} s; raise its --max-concurrent or add replicas`,
          );
        await sleep(Math.min(verdict.waitMs, left));
        continue;
      }
      if (verdict.kind === 'down') {
        this.set.markDown(r, verdict.why);
        continue; // another replica takes the request (and the episode)
      }
      if (verdict.kind === 'failed') {
        if (++r.failures >= REPEATED_FAILURES) this.set.markDown(r, `${r.failures} answers in a row: ${verdict.why}`);
        else await sleep(FAILURE_BACKOFF_MS);
        continue;
      }
      if (verdict.kind === 'refused') throw new EngineError(`${r.endpoint.href}: ${verdict.why}`);
      r.failures = 0;
      this.served = true;
      let result: SampleResult;
      try {
        result = protocol.parseResponse(verdict.json, request);
      } catch (e) {
        throw new EngineError(`${r.endpoint.href}: ${(e as Error).message}`);
      }
      // The adapter's name is its version (the answer's weight_version labels the base).
      if (adapter !== undefined && version !== undefined && 'exact' in version)
        return { ...result, weightVersion: version.exact };
      if (
        version !== undefined &&
        result.weightVersion !== undefined &&
        !acceptsVersion(version, result.weightVersion)
      ) {
        r.weightVersion = result.weightVersion; // swapped under us: stale for this request
        continue;
      }
      return result;
    }
  }

  /** The replica for this request (replica-set.ts); waits, probing, until one can serve or the deadline passes. */
  private async pick(
    episodeId: string | undefined,
    versionNow: () => WantedVersion | undefined,
    deadline: number,
  ): Promise<Replica> {
    // A down replica is asked again in the background while the others serve: once it answers
    // (with the weights asked for) it takes new episodes again.
    if (this.set.replicas.some((r) => !r.up)) void this.set.probeAll();
    for (;;) {
      const version = versionNow();
      const chosen = this.set.choose(episodeId, version);
      if (chosen) return chosen;
      // Every replica answers and reports no version: waiting changes nothing, the caller must accept it.
      if (version !== undefined && this.set.replicas.every((r) => r.up && r.unversioned))
        throw new EngineError(
          unversionedRefusal(this.set.replicas.map((r) => r.url).join(', '), describeWanted(version)),
        );
      if (Date.now() >= deadline)
        throw new (this.served ? EngineFault : EngineError)(
          `no engine replica${version !== undefined ? ` serving ${describeWanted(version)}` : ''} answered within ${Math.round(this.waitMs / 1000)} s: ${this.set.replicas.map((r) => `${r.url} ${!r.up ? `down (${r.lastError ?? 'no answer'})` : r.unversioned ? 'reports no weight version' : `serves ${r.weightVersion ?? '?'}`}`).join('; ')}`,
        );
      await this.set.probeAll();
      await new Promise((res) => setTimeout(res, Math.min(this.probeMs, Math.max(1, deadline - Date.now()))));
    }
  }
}
