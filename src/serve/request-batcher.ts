import type { SampleRequest, SampleResult, SamplingParams } from '../contracts/index.ts';

/** A TokenSampler that may be told which served model answers (a LoRA adapter's name; absent: the base). */
export interface ModelsSampler {
  sample(requests: readonly SampleRequest[], params: SamplingParams, adapter?: string): Promise<SampleResult[]>;
}

interface Pending {
  request: SampleRequest;
  params: SamplingParams;
  adapter: string | undefined;
  resolve(r: SampleResult): void;
  reject(e: Error): void;
}

/**
 * Continuous batching in front of one TokenSampler, as an engine batches on its side: requests
 * that arrive in the same turn of the event loop, or while the sampler is busy with an earlier
 * batch, go into one sample() call per (model, temperature, top-p). A batch that fails is retried one
 * request at a time, so one bad request fails only itself, never its batch-mates.
 */
export class RequestBatcher {
  private queue: Pending[] = [];
  private scheduled = false;

  constructor(private readonly sampler: ModelsSampler) {}

  /** Samples `requests` with `params`, batched with whatever else is waiting; rejects with the sampler's error. */
  sample(requests: readonly SampleRequest[], params: SamplingParams, adapter?: string): Promise<SampleResult[]> {
    return Promise.all(
      requests.map(
        (request) =>
          new Promise<SampleResult>((resolve, reject) => {
            this.queue.push({ request, params, adapter, resolve, reject });
            if (!this.scheduled) {
              this.scheduled = true;
              setImmediate(() => void this.flush());
            }
          }),
      ),
    );
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    const groups = new Map<string, Pending[]>();
    for (const p of batch) {
      const key = `${p.adapter ?? ''}/${p.params.temperature}/${p.params.topP}`;
      const group = groups.get(key);
      if (group) group.push(p);
      else groups.set(key, [p]);
    }
    for (const group of groups.values()) {
      try {
        const results = await this.sampler.sample(
          group.map((p) => p.request),
          group[0]!.params,
          group[0]!.adapter,
        );
        group.forEach((p, i) => p.resolve(results[i]!));
      } catch {
        // One bad request must not fail its batch-mates: run each alone to find whose it was.
        for (const p of group)
          await this.sampler.sample([p.request], p.params, p.adapter).then(
            (r) => p.resolve(r[0]!),
            (e: Error) => p.reject(e),
          );
      }
    }
  }
}
