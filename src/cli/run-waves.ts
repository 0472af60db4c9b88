import { SingleBar } from 'cli-progress';
import { withStepDelay } from '../env/step-delay.ts';
import type { ChatLayout } from '../rollout/chat-layout.ts';
import type { RolloutConfig } from '../rollout/config.ts';
import type { EpisodeSpec } from '../rollout/episode.ts';
import type { TokenSampler } from '../contracts/index.ts';
import { AtomicLineWriter } from '../util/atomic-write.ts';
import { recordLine } from '../rollout/record-file.ts';
import { runEpisodes } from '../rollout/runner.ts';
import { InterruptedError } from './errors.ts';
import { RunTally, type RunSummary } from './run-summary.ts';

/**
 * Episodes are built and run in waves of at most this many: an environment (a sandbox, a task
 * state) exists only while its wave runs, so `--episodes` of any size runs in bounded memory.
 */
export const EPISODE_WAVE = 1024;

/**
 * Runs the episodes in waves (EPISODE_WAVE), streaming each record to --out as it ends, with a
 * progress bar on stderr; the summary is tallied as records arrive.
 */
export async function runAndWrite(options: {
  count: number;
  /** Episode i, built only when its wave starts. */
  episodeAt: (i: number) => EpisodeSpec;
  config: RolloutConfig;
  layout: ChatLayout;
  actor: TokenSampler;
  summarizer: TokenSampler;
  concurrency: number | undefined;
  /** Every environment step waits this long first (ms; env/step-delay.ts). */
  stepDelayMs: number;
  out: string;
}): Promise<RunSummary> {
  const { count, out } = options;
  const concurrency = Math.min(options.concurrency ?? EPISODE_WAVE, EPISODE_WAVE);
  if (options.concurrency !== undefined && options.concurrency > EPISODE_WAVE)
    process.stderr.write(
      `crl: note: --concurrency ${options.concurrency} is capped at ${EPISODE_WAVE} episodes in flight\n`,
    );
  // Records go to a partial file as episodes end and replace --out only when all have run.
  const writer = new AtomicLineWriter(out);
  const bar = new SingleBar({ stream: process.stderr, format: 'episodes {bar} {value}/{total} | pass {pass}' });
  bar.start(count, 0, { pass: 0 });
  const tally = new RunTally();
  // Ctrl-C / SIGTERM end the run through the runtime (every env closed, sandboxes removed) and
  // say where the records so far are, instead of the process dying silently.
  const stop = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => stop.abort(new InterruptedError(signal));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (let start = 0; start < count; start += EPISODE_WAVE) {
      const size = Math.min(EPISODE_WAVE, count - start);
      await runEpisodes({
        signal: stop.signal,
        episodes: Array.from({ length: size }, (_, j) => {
          const e = options.episodeAt(start + j);
          return { ...e, env: withStepDelay(e.env, options.stepDelayMs) };
        }),
        config: options.config,
        layout: options.layout,
        actor: options.actor,
        summarizer: options.summarizer,
        concurrency,
        onEpisodeEnd: (rec) => {
          writer.append(recordLine(rec));
          tally.add(rec);
          bar.increment(1, { pass: tally.passes });
        },
      });
    }
    writer.commit();
  } catch (e) {
    bar.stop();
    writer.abort({ keepIfNonEmpty: true });
    const interrupted = e instanceof InterruptedError;
    if (writer.lines > 0)
      process.stderr.write(
        `crl: the run ${interrupted ? 'was interrupted' : 'failed'} after ${writer.lines} episodes; their records are in ${writer.partialPath} (${out} is unchanged)\n`,
      );
    else if (interrupted)
      process.stderr.write(`crl: the run was interrupted before any episode ended (${out} is unchanged)\n`);
    throw e;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  bar.stop();
  const summary = tally.summary();
  process.stderr.write(`crl: wrote ${summary.episodes} episode records to ${out}\n`);
  if (summary.envErrors > 0)
    process.stderr.write(
      `crl: warning: ${summary.envErrors} of ${summary.episodes} episodes ended in a fault, not the agent's doing (counted as failures in passAt1; by kind: ${faultKinds(summary.faults)}); the first: ${tally.firstEnvError}\n`,
    );
  return summary;
}

/** `sandbox 2, verifier 1`: the kinds that occurred. */
function faultKinds(faults: Readonly<Record<string, number>>): string {
  return Object.entries(faults)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}
