import type { ChatLayout } from './chat-layout.ts';
import { budgetProblems, RolloutConfigError, type RolloutConfig } from './config.ts';
import { EpisodeRun, type EpisodeSpec } from './episode.ts';
import type { EpisodeRecord } from './record.ts';
import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from './types.ts';

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
}

/**
 * Runs episodes with compaction (method §2-3). Many episodes advance together: each round, every
 * live episode contributes exactly one request (an action or a summary), requests are routed by
 * stage to the actor or the summarizer, and each sampler gets one batch call. Returns records in
 * input order.
 */
export async function runEpisodes(options: RunEpisodesOptions): Promise<EpisodeRecord[]> {
  const { episodes, config, layout, actor } = options;
  const summarizer = options.summarizer ?? actor;
  const version = options.policyVersion ?? (() => 0);
  const concurrency = Math.max(1, options.concurrency ?? episodes.length);
  const problems = budgetProblems(config, layout);
  if (problems.length > 0) throw new RolloutConfigError(problems);
  const params: SamplingParams = { temperature: config.temperature, topP: config.topP };

  const records: EpisodeRecord[] = new Array(episodes.length);
  const live: { run: EpisodeRun; index: number }[] = [];
  let next = 0;
  const retire = (run: EpisodeRun, index: number): void => {
    const rec = run.record();
    records[index] = rec;
    options.onEpisodeEnd?.(rec, index);
  };
  const fill = (): void => {
    while (live.length < concurrency && next < episodes.length) {
      const index = next++;
      const run = new EpisodeRun(episodes[index]!, config, layout);
      run.start();
      if (run.phase === 'done') retire(run, index);
      else live.push({ run, index });
    }
  };

  fill();
  while (live.length > 0) {
    const groups = groupBySampler(
      live.map((e) => e.run),
      { actor, summarizer },
    );
    const results = await Promise.all(groups.map((g) => sampleChecked(g.sampler, g.requests, params)));
    const v = version();
    groups.forEach((g, gi) => g.runs.forEach((run, i) => run.accept(results[gi]![i]!, v)));
    for (let i = live.length - 1; i >= 0; i--) {
      const e = live[i]!;
      if (e.run.phase === 'done') {
        live.splice(i, 1);
        retire(e.run, e.index);
      }
    }
    fill();
  }
  return records;
}

interface SamplerGroup {
  sampler: TokenSampler;
  runs: EpisodeRun[];
  requests: SampleRequest[];
}

/** One group per distinct sampler object, so a shared actor/summarizer gets a single call. */
function groupBySampler(
  runs: readonly EpisodeRun[],
  samplers: { actor: TokenSampler; summarizer: TokenSampler },
): SamplerGroup[] {
  const groups = new Map<TokenSampler, SamplerGroup>();
  for (const run of runs) {
    const sampler = run.phase === 'summarize' ? samplers.summarizer : samplers.actor;
    let g = groups.get(sampler);
    if (!g) groups.set(sampler, (g = { sampler, runs: [], requests: [] }));
    g.runs.push(run);
    g.requests.push(run.request());
  }
  return [...groups.values()];
}

async function sampleChecked(
  sampler: TokenSampler,
  requests: SampleRequest[],
  params: SamplingParams,
): Promise<SampleResult[]> {
  const out = await sampler.sample(requests, params);
  if (out.length !== requests.length) {
    throw new Error(`sampler returned ${out.length} results for ${requests.length} requests`);
  }
  return out;
}
