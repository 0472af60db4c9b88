import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig, type RolloutConfigInput } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { Rng } from '../../util/random.ts';
import type { TaskFamily } from '../../env/family.ts';
import type { TextPolicy } from '../../contracts/index.ts';

/**
 * Test and measurement helper: runs a family's scripted expert through the real rollout runtime
 * (src/rollout/, method §2) with a chosen summary writer. Lives under testing/ because it imports
 * the runtime, which env/ itself must not (imports flow rollout -> env).
 */
export type WriterChoice = 'oracle' | 'null' | 'self' | { lossy: number };

export function writerPolicy(family: TaskFamily, writer: WriterChoice): TextPolicy {
  if (writer === 'oracle') return family.summaryWriters.oracle;
  if (writer === 'null') return () => '';
  if (writer === 'self') return family.expert;
  return family.summaryWriters.lossy(writer.lossy);
}

export async function runExpertEpisodes(options: {
  family: TaskFamily;
  knobs?: Record<string, unknown>;
  seeds: readonly number[];
  writer: WriterChoice;
  windows: number;
  rngSeed?: number;
  rollout?: RolloutConfigInput;
  /** --tokenizer value (default: the family's own, else word). */
  tokenizer?: string;
  /** Episodes in flight at once (default all; sandboxed families want fewer). */
  concurrency?: number;
}): Promise<EpisodeRecord[]> {
  const { family, seeds, writer, windows } = options;
  const tokenizer = loadTokenizer(options.tokenizer ?? family.tokenizer ?? 'word');
  const { config, layout } = resolveRolloutConfig({
    tokenizer,
    input: { ...family.rollout, ...options.rollout, maxWindows: windows },
  });
  const rng = new Rng(options.rngSeed ?? 1);
  const actor = textPolicySampler({ tokenizer, policy: family.expert, rng });
  const summarizer = textPolicySampler({ tokenizer, policy: writerPolicy(family, writer), rng });
  const episodes = seeds.map((seed, i) => ({
    episodeId: `${family.name}-${i}`,
    env: family.create(options.knobs ?? {}),
    seed,
  }));
  return runEpisodes({ episodes, config, layout, actor, summarizer, concurrency: options.concurrency });
}

/** Windows an episode used (compactions + 1). */
export const windowsUsed = (r: EpisodeRecord): number => r.compactions + 1;
