import {
  SamplerFault,
  type SampleRequest,
  type SampleResult,
  type SamplingParams,
  type TokenSampler,
} from '../contracts/index.ts';

/**
 * Continuous batching for the rollout runner. Episodes advance independently (an environment
 * may take a millisecond or a minute per step); each one that needs tokens queues its request
 * with the sampler of its stage. A sampler is called with everything queued for it when it is
 * idle and either
 *   - every live episode is waiting in a queue (nobody else could still join: with in-process
 *     environments this reproduces the lock-step rounds exactly, batch for batch), or
 *   - its oldest queued request has waited `batchWaitMs` (a slow environment does not hold the
 *     others back; its episode joins a later call).
 * One call per sampler is in flight at a time (the embedded engine is not re-entrant); requests
 * in a call are ordered by episode index, and samplers flushed together are called in the order
 * of their lowest episode index, so a run is reproducible from its seeds. A call that fails with a
 * SamplerFault fails only the requests it names (their episodes end as engine faults); any other
 * failure ends the run.
 */

interface Pending {
  index: number;
  request: SampleRequest;
  resolve: (r: { result: SampleResult; version: number }) => void;
  reject: (e: Error) => void;
}

interface Lane {
  sampler: TokenSampler;
  queue: Pending[];
  busy: boolean;
  /** When the oldest queued request arrived (ms), for the wait deadline. */
  since: number;
  timer: NodeJS.Timeout | null;
}

export class BatchScheduler {
  private readonly lanes = new Map<TokenSampler, Lane>();
  /** Live episodes not waiting in a queue: stepping, resetting, closing, or in a sampler call. */
  private active = 0;
  private failure: Error | null = null;
  private roundPending = false;

  constructor(
    private readonly options: {
      params: SamplingParams;
      /** Policy version read as each call starts, recorded per segment. */
      version: () => number;
      batchWaitMs: number;
      /** A sampler call failed or broke the contract: the run cannot go on. */
      onFatal: (e: Error) => void;
    },
  ) {}

  /** A live episode started doing something other than waiting for tokens. */
  enter(): void {
    this.active++;
  }

  /** A live episode ended (after enter(), without a pending request). */
  leave(): void {
    this.active--;
    this.poke();
  }

  /**
   * Queues one episode's request (the caller counts as active until now) and resolves with its
   * result once a call that carries it returns.
   */
  submit(options: { sampler: TokenSampler; index: number; request: SampleRequest }): Promise<{
    result: SampleResult;
    version: number;
  }> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const lane = this.lane(options.sampler);
    return new Promise((resolve, reject) => {
      if (lane.queue.length === 0) lane.since = Date.now();
      lane.queue.push({ index: options.index, request: options.request, resolve, reject });
      this.active--;
      this.poke();
    });
  }

  /** Rejects everything queued (and refuses new requests): the run is being torn down. */
  abort(reason: Error): void {
    if (this.failure === null) this.failure = reason;
    for (const lane of this.lanes.values()) {
      if (lane.timer) clearTimeout(lane.timer);
      lane.timer = null;
      for (const p of lane.queue.splice(0)) p.reject(reason);
    }
  }

  private lane(sampler: TokenSampler): Lane {
    let lane = this.lanes.get(sampler);
    if (!lane) this.lanes.set(sampler, (lane = { sampler, queue: [], busy: false, since: 0, timer: null }));
    return lane;
  }

  /** Decides, after any change, which idle samplers to call now and which to call later. */
  private poke(): void {
    if (this.failure !== null) return;
    const ready = [...this.lanes.values()].filter((l) => !l.busy && l.queue.length > 0);
    if (ready.length === 0) return;
    if (this.active === 0 && [...this.lanes.values()].every((l) => !l.busy)) {
      // Everyone is waiting: one round, as the lock-step runner did it. Called from a macrotask,
      // not inline: with environments and samplers that answer at once the whole run would
      // otherwise be one chain of microtasks, and the process would never see a signal (Ctrl-C)
      // until it ended. Nobody else can queue meanwhile and no deadline timer is left to fire
      // first, so the round holds the same requests in the same order.
      if (this.roundPending) return;
      this.roundPending = true;
      for (const lane of ready) {
        if (lane.timer) clearTimeout(lane.timer); // the round flushes it: no lone flush before it
        lane.timer = null;
      }
      setImmediate(() => {
        this.roundPending = false;
        if (this.failure !== null) return;
        const due = [...this.lanes.values()].filter((l) => !l.busy && l.queue.length > 0);
        due.sort((a, b) => minIndex(a) - minIndex(b));
        for (const lane of due) this.flush(lane);
      });
      return;
    }
    // Deadlines are only acted on from a timer, never inline: episodes whose environments answer
    // at once all queue within the same microtask run, before any timer can fire, so wall-clock
    // speed never changes which requests share a call.
    const now = Date.now();
    for (const lane of ready) {
      if (lane.timer) continue;
      lane.timer = setTimeout(
        () => {
          lane.timer = null;
          if (this.failure === null && !lane.busy && lane.queue.length > 0) this.flush(lane);
        },
        Math.max(0, lane.since + this.options.batchWaitMs - now),
      );
    }
  }

  private flush(lane: Lane): void {
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = null;
    const batch = lane.queue.splice(0).sort((a, b) => a.index - b.index);
    lane.busy = true;
    this.active += batch.length;
    const requests = batch.map((p) => p.request);
    // Read before the call: weights pushed while it runs (an asynchronous trainer, docs/async.md)
    // then make its tokens look older than they may be, never newer, so staleness is never
    // under-counted.
    const version = this.options.version();
    let call: Promise<SampleResult[]>;
    try {
      call = lane.sampler.sample(requests, this.options.params);
    } catch (e) {
      call = Promise.reject(asError(e));
    }
    call
      .then((results) => {
        if (results.length !== requests.length) {
          throw new Error(`sampler returned ${results.length} results for ${requests.length} requests`);
        }
        lane.busy = false;
        batch.forEach((p, i) => p.resolve({ result: results[i]!, version }));
        // Requests that queued during the call may be due now.
        this.poke();
      })
      .catch((thrown: unknown) => {
        const e = asError(thrown);
        lane.busy = false;
        if (e instanceof SamplerFault && e.results.length === requests.length && this.failure === null) {
          // The engine failed some requests (docs/faults.md): their episodes end as engine faults,
          // the rest take their results; the run goes on.
          const version = this.options.version();
          batch.forEach((p, i) => {
            const result = e.results[i];
            if (result) p.resolve({ result, version });
            else p.reject(new SamplerFault(e.reasons[i] ?? e.message, []));
          });
          this.poke();
          return;
        }
        this.abort(e);
        for (const p of batch) p.reject(e);
        this.options.onFatal(e);
      });
  }
}

function minIndex(lane: Lane): number {
  let m = Infinity;
  for (const p of lane.queue) m = Math.min(m, p.index);
  return m;
}

export function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
