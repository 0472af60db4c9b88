import { SamplerFault, type SampleRequest, type SampleResult } from '../contracts/index.ts';

/** A remote engine failed in a way retrying did not fix; the message says which URL and why. */
export class EngineError extends Error {
  override readonly name: string = 'EngineError';
}

/**
 * An engine that had served this run failed one request past its retries or deadline (refused
 * connections, answers cut off, 5xx, busy for too long): the request's episode ends as an
 * `engine` fault (docs/faults.md). An engine that never answered is a plain EngineError instead:
 * a wrong URL or a server not started is the user's to fix, not a fault to count.
 */
export class EngineFault extends EngineError {
  override readonly name = 'EngineFault';
  readonly faultKind = 'engine' as const;
}

/**
 * One sampler call, each request on its own (`one`): all results, or a SamplerFault that carries
 * the results of the requests that were answered when the others failed with an EngineFault. Any
 * other failure is thrown as it is (a refused request, a malformed answer: the run stops).
 */
export async function sampleEach(
  requests: readonly SampleRequest[],
  one: (request: SampleRequest) => Promise<SampleResult>,
): Promise<SampleResult[]> {
  const settled = await Promise.allSettled(requests.map(one));
  const fatal = settled.find((s) => s.status === 'rejected' && !(s.reason instanceof EngineFault));
  if (fatal) throw (fatal as PromiseRejectedResult).reason;
  const faults = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as EngineFault] : []));
  const results = settled.map((s) => (s.status === 'fulfilled' ? s.value : null));
  if (faults.length === 0) return results as SampleResult[];
  const reasons = settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : null));
  const more = faults.length > 1 ? ` (and ${faults.length - 1} more request(s) of this call)` : '';
  throw new SamplerFault(`${faults[0]!.message}${more}`, results, reasons);
}
