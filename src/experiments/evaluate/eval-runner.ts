import type { TaskFamily } from '../../env/family.ts';
import type { EpisodeBatchRunner } from '../../eval/evaluate.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { faultKind, isFault } from '../../rollout/faults.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import type { ChatTemplateSource } from '../../rollout/chat-format.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import type { SamplerFactory } from './policy-source.ts';

/**
 * Builds the evaluator's episode runner: the rollout runtime with a fixed acting sampler, an
 * optional summary writer (method §8 Table 1: only the writer changes), and K per mode at one C.
 */
export function episodeBatchRunner(options: {
  family: TaskFamily;
  knobs: Record<string, unknown>;
  rolloutInput: Record<string, unknown>;
  tokenizer: ChatTemplateSource;
  actor: SamplerFactory;
  summarizer: SamplerFactory | null;
  seed: number;
}): EpisodeBatchRunner {
  return async ({ episodes, windows }) => {
    const { config, layout } = resolveRolloutConfig({
      input: { ...options.rolloutInput, maxWindows: windows },
      tokenizer: options.tokenizer,
      tools: options.family.tools ?? null,
    });
    // Sampling streams depend on (seed, K) only, so every mode is reproducible on its own.
    const actor = options.actor(new Rng(mixSeed(options.seed, windows, 1)));
    const summarizer = options.summarizer ? options.summarizer(new Rng(mixSeed(options.seed, windows, 2))) : actor;
    const records = await runEpisodes({
      episodes: episodes.map((e, i) => ({
        episodeId: `eval-x${windows}-${e.seed}-${e.sample}-${i}`,
        env: options.family.create(options.knobs),
        seed: e.seed,
      })),
      config,
      layout,
      actor,
      summarizer,
    });
    return records.map((r) => ({
      reward: r.reward >= 1 ? 1 : 0,
      compactions: r.compactions,
      outcome: r.outcome,
      ...(isFault(r) ? { fault: faultKind(r) } : {}),
      generatedTokens: r.generatedTokens,
    }));
  };
}

/**
 * Task seeds from the family's evaluation range (disjoint from training seeds, method §8): task i
 * gets seed start + (offset + i), wrapping around the range. crl eval uses offset 0; crl run
 * offsets by its --seed.
 */
export function evalTaskSeeds(
  family: Pick<TaskFamily, 'evalSeeds'>,
  options: { tasks: number; offset?: number },
): number[] {
  const { start, end } = family.evalSeeds;
  const offset = options.offset ?? 0;
  return Array.from({ length: options.tasks }, (_, i) => start + ((offset + i) % (end - start)));
}
