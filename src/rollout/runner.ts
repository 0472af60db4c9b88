import { asError, BatchScheduler } from './batch-scheduler.ts';
import { CancelScope } from './cancel-scope.ts';
import type { ChatLayout } from './chat-layout.ts';
import { budgetProblems, RolloutConfigError, type RolloutConfig } from './config.ts';
import { callEnv, EnvCallError } from './env-call.ts';
import { EpisodeRun, type EpisodeSpec } from './episode.ts';
import type { EpisodeRecord } from './record.ts';
import { SamplerFault, type SamplingParams, type TokenSampler } from '../contracts/index.ts';

export interface RunEpisodesOptions {
  episodes: readonly EpisodeSpec[];
  /** From resolveRolloutConfig (checked again here: no unvalidated budget gets through). */
  config: RolloutConfig;
  layout: ChatLayout;
  /** Samples actions (and summaries when no summarizer is given). */
  actor: TokenSampler;
  /** Samples summaries; the same object as actor means one batch call for both stages. */
  summarizer?: TokenSampler;
  /** Version of the weights the samplers hold now, recorded per segment. Default 0. */
  policyVersion?: () => number;
  /** Episodes in flight at once (default: all). A finished episode's slot goes to the next. */
  concurrency?: number;
  /** Called as each episode ends, in completion order (e.g. to stream records to disk). */
  onEpisodeEnd?: (record: EpisodeRecord, index: number) => void;
  /**
   * Longest one environment call (reset or step) may take before the episode ends as an
   * env-error and the environment is closed (ms). Default 30 minutes: environments that run
   * commands enforce their own, shorter limits; this one catches an environment that hangs.
   */
  envTimeoutMs?: number;
  /** How long a queued request waits for slower episodes before its sampler is called without them (ms, default 25). */
  batchWaitMs?: number;
  /** Cancels the run: in-flight environment calls are aborted, every open environment is closed, and the promise rejects. */
  signal?: AbortSignal;
}

const DEFAULT_ENV_TIMEOUT_MS = 30 * 60_000;
const CLOSE_TIMEOUT_MS = 60_000;

/**
 * Runs episodes with compaction (method §2-3). Each episode advances on its own: it resets its
 * environment, asks the sampler of its stage (actor or summarizer) for tokens, steps its
 * environment with the action, and so on; requests from many episodes are batched into each
 * sampler call without waiting for the slowest environment (continuous batching,
 * batch-scheduler.ts). An environment that throws or times out ends only its own episode (outcome
 * 'env-error', a fault: the reason and its kind in the record), and so does an engine that fails
 * its request after having served (a SamplerFault: an 'engine' fault); every environment is closed
 * when its episode ends. Any other sampler failure, a config error or a cancelled signal ends the
 * whole run, after closing whatever is open. Returns records in input order.
 */
export async function runEpisodes(options: RunEpisodesOptions): Promise<EpisodeRecord[]> {
  const { episodes, config, layout, actor } = options;
  const summarizer = options.summarizer ?? actor;
  const concurrency = Math.max(1, Math.min(options.concurrency ?? episodes.length, episodes.length));
  const problems = budgetProblems(config, layout);
  if (problems.length > 0) throw new RolloutConfigError(problems);
  const params: SamplingParams = { temperature: config.temperature, topP: config.topP };
  const envTimeoutMs = options.envTimeoutMs ?? DEFAULT_ENV_TIMEOUT_MS;

  // Cancelled on the first fatal error or when the caller cancels. Every env call gets its own
  // signal from it (cancel-scope.ts): no shared signal collects a listener per call.
  const run = new CancelScope();
  // Held in an object: TypeScript does not track assignments made inside the closures below.
  const state: { fatal: Error | null } = { fatal: null };
  const fail = (e: unknown): void => {
    const fatal = (state.fatal ??= asError(e));
    scheduler.abort(fatal);
    run.cancel(fatal);
  };
  const cancelled = (): Error => asError(options.signal?.reason ?? new Error('the run was cancelled'));
  const onCallerAbort = (): void => fail(cancelled());
  if (options.signal?.aborted) throw cancelled();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });

  const scheduler = new BatchScheduler({
    params,
    version: options.policyVersion ?? (() => 0),
    batchWaitMs: options.batchWaitMs ?? 25,
    onFatal: fail,
  });
  const records = new Array<EpisodeRecord>(episodes.length);
  let next = 0;

  const playOne = async (index: number): Promise<void> => {
    const spec = episodes[index]!;
    const ep = new EpisodeRun(spec, config, layout);
    const call = async <T>(during: 'reset' | 'step', f: (signal: AbortSignal) => T | Promise<T>): Promise<T> => {
      const { signal, release } = run.enter();
      try {
        return await callEnv({ during, f, timeoutMs: envTimeoutMs, parent: signal });
      } finally {
        release();
      }
    };
    try {
      try {
        ep.open(
          await call('reset', (signal) =>
            spec.env.reset(spec.seed, { signal, agentFormat: layout.agent ? 'tools' : 'text' }),
          ),
        );
      } catch (e) {
        if (!(e instanceof EnvCallError) || run.reason) throw e;
        ep.failEnv({ during: 'reset', cause: e.reason, fault: e.fault, message: e.message });
      }
      while (ep.phase !== 'done') {
        const request = ep.request();
        const sampler = ep.phase === 'summarize' ? summarizer : actor;
        let answer;
        try {
          answer = await scheduler.submit({ sampler, index, request });
        } catch (e) {
          // The engine failed this request after it had served (docs/faults.md): the episode
          // ends as an engine fault, the run goes on. Anything else ends the run.
          if (!(e instanceof SamplerFault) || run.reason) throw e;
          ep.failEnv({ during: 'sample', cause: 'error', fault: 'engine', message: e.message });
          break;
        }
        ep.accept(answer.result, answer.version);
        if (ep.phase !== 'env') continue;
        // A turn that is not one good tool call: the agent is told so, and the environment is not stepped.
        if (ep.pendingError !== null) {
          ep.observe({ observation: ep.pendingError, done: false, reward: 0 });
          continue;
        }
        try {
          ep.observe(await call('step', (signal) => spec.env.step(ep.pendingAction, { signal })));
        } catch (e) {
          if (!(e instanceof EnvCallError) || run.reason) throw e;
          ep.failEnv({ during: 'step', cause: e.reason, fault: e.fault, message: e.message });
        }
      }
    } finally {
      await closeEnv(spec, ep);
    }
    const rec = ep.record();
    records[index] = rec;
    options.onEpisodeEnd?.(rec, index);
  };

  // One worker per slot; a worker counts as active from its first reset to its last close, so a
  // freed slot is refilled before the next lock-step round could start without it.
  const worker = async (): Promise<void> => {
    scheduler.enter();
    try {
      while (next < episodes.length && state.fatal === null) {
        const index = next++;
        // The episode that takes this slot's turn after the running ones may start its sandbox now.
        prepare(episodes[index + concurrency]);
        await playOne(index);
      }
    } catch (e) {
      fail(e);
    } finally {
      scheduler.leave();
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
  if (state.fatal !== null) throw state.fatal;
  return records;
}

/** Closes an episode's environment with a bounded wait; a failure is recorded, not thrown. */
async function closeEnv(spec: EpisodeSpec, ep: EpisodeRun): Promise<void> {
  if (!spec.env.close) return;
  try {
    await callEnv({ during: 'close', f: () => spec.env.close!(), timeoutMs: CLOSE_TIMEOUT_MS });
  } catch (e) {
    const cause = e instanceof EnvCallError ? e.reason : 'error';
    const fault = e instanceof EnvCallError ? e.fault : 'environment';
    if (ep.phase === 'done') ep.noteCloseError({ cause, fault, message: (e as Error).message });
  }
}

/** Env.prepare, a hint only: whatever it throws is left to the episode's own reset. */
function prepare(spec: EpisodeSpec | undefined): void {
  try {
    spec?.env.prepare?.();
  } catch {
    // reset reports it
  }
}
