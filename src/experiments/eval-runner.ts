import type { TaskFamily, TextPolicy } from '../env/family.ts';
import type { EpisodeBatchRunner } from '../eval/evaluate.ts';
import type { SummaryWriterSpec } from '../eval/summary-writer.ts';
import { resolveRolloutConfig } from '../rollout/config.ts';
import { runEpisodes } from '../rollout/runner.ts';
import { textPolicySampler } from '../rollout/text-policy-sampler.ts';
import type { ChatTemplateSource } from '../rollout/chat-format.ts';
import type { TokenSampler } from '../rollout/types.ts';
import { mixSeed, Rng } from '../util/random.ts';

/**
 * Builds the evaluator's episode runner: the rollout runtime with a fixed acting sampler, an
 * optional summary writer (method §8 Table 1: only the writer changes), and K per mode at one C.
 */

/** Makes a sampler from an rng: the acting policy or a writer. */
export type SamplerFactory = (rng: Rng) => TokenSampler;

type WriterImpl = { text: TextPolicy } | { sampler: SamplerFactory } | null;

/** Summary writers by kind (registry, not branches); null means "the actor writes its own". */
const WRITERS: Record<
  SummaryWriterSpec['kind'],
  (o: {
    spec: SummaryWriterSpec;
    family: TaskFamily;
    checkpointSampler: (path: string) => SamplerFactory;
  }) => WriterImpl
> = {
  self: () => null,
  oracle: ({ family }) => ({ text: family.summaryWriters.oracle }),
  null: () => ({ text: () => '' }),
  lossy: ({ spec, family }) => ({
    text: spec.kind === 'lossy' ? family.summaryWriters.lossy(spec.p, spec.goalP) : family.summaryWriters.lossy(0),
  }),
  checkpoint: ({ spec, checkpointSampler }) => ({
    sampler: checkpointSampler(spec.kind === 'checkpoint' ? spec.path : ''),
  }),
};

export function summaryWriterFactory(options: {
  spec: SummaryWriterSpec;
  family: TaskFamily;
  tokenizer: ChatTemplateSource;
  checkpointSampler: (path: string) => SamplerFactory;
}): SamplerFactory | null {
  const w = WRITERS[options.spec.kind](options);
  if (w === null) return null;
  if ('sampler' in w) return w.sampler;
  return (rng) => textPolicySampler({ tokenizer: options.tokenizer, policy: w.text, rng });
}

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
