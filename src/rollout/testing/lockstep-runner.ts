import type { ChatLayout } from '../chat-layout.ts';
import type { RolloutConfig } from '../config.ts';
import { EpisodeRun, type EpisodeSpec } from '../episode.ts';
import type { EpisodeRecord } from '../record.ts';
import type { EnvReset, EnvStep, TokenSampler } from '../../contracts/index.ts';

/**
 * Test oracle: the runner as it was before continuous batching, for in-process environments
 * only. Every round, each live episode contributes one request; one call per distinct sampler
 * (in order of first appearance); all results are accepted and environments stepped before the
 * next round; finished episodes leave and freed slots are refilled at the end of a round.
 */
export async function lockStepRunEpisodes(options: {
  episodes: readonly EpisodeSpec[];
  config: RolloutConfig;
  layout: ChatLayout;
  actor: TokenSampler;
  summarizer?: TokenSampler;
  concurrency?: number;
}): Promise<EpisodeRecord[]> {
  const { episodes, config, layout, actor } = options;
  const summarizer = options.summarizer ?? actor;
  const concurrency = Math.max(1, options.concurrency ?? episodes.length);
  const params = { temperature: config.temperature, topP: config.topP };
  const records = new Array<EpisodeRecord>(episodes.length);
  const live: { run: EpisodeRun; index: number }[] = [];
  let next = 0;
  const fill = (): void => {
    while (live.length < concurrency && next < episodes.length) {
      const index = next++;
      const spec = episodes[index]!;
      const run = new EpisodeRun(spec, config, layout);
      run.open(now(spec.env.reset(spec.seed)));
      if (run.phase === 'done') records[index] = run.record();
      else live.push({ run, index });
    }
  };
  fill();
  while (live.length > 0) {
    const groups = new Map<TokenSampler, EpisodeRun[]>();
    for (const { run } of live) {
      const s = run.phase === 'summarize' ? summarizer : actor;
      groups.set(s, [...(groups.get(s) ?? []), run]);
    }
    const entries = [...groups.entries()];
    const results = await Promise.all(
      entries.map(([s, runs]) =>
        s.sample(
          runs.map((r) => r.request()),
          params,
        ),
      ),
    );
    entries.forEach(([, runs], g) =>
      runs.forEach((run, i) => {
        run.accept(results[g]![i]!, 0);
        if (run.phase === 'env') run.observe(now(run.spec.env.step(run.pendingAction)));
      }),
    );
    for (let i = live.length - 1; i >= 0; i--) {
      if (live[i]!.run.phase === 'done') {
        records[live[i]!.index] = live[i]!.run.record();
        live.splice(i, 1);
      }
    }
    fill();
  }
  return records;
}

function now<T extends EnvReset | EnvStep>(answer: T | Promise<T>): T {
  if (answer instanceof Promise) throw new Error('the lock-step oracle runs in-process environments only');
  return answer;
}
