import type { TaskFamily } from '../env/family.ts';
import type { SummaryWriterSpec } from '../eval/summary-writer.ts';
import { policySource, summaryWriterSource } from '../experiments/evaluate/policy-source.ts';
import type { LoadedTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import type { PrecisionChoice } from '../model/network/weight-precision.ts';
import type { TokenSampler } from '../contracts/index.ts';
import type { AgentProtocol } from '../rollout/agent-format/agent-protocol.ts';
import { mixSeed, Rng } from '../util/random.ts';

/**
 * `crl run`'s acting and summary samplers. What --policy and --summary-writer name is resolved and
 * checked by experiments/evaluate/policy-source.ts, as for crl eval and the pipeline; only the random
 * streams are crl run's own, unchanged so that a --seed reproduces the same records: a scripted
 * actor draws from mixSeed(seed, 1), a model actor from mixSeed(seed, 3), a scripted writer from
 * mixSeed(seed, 2) and a model writer from mixSeed(mixSeed(seed, 2), 3).
 */
export async function runSamplers(options: {
  policy: string;
  /** An actor made elsewhere (the harbor-oracle and harbor-nop policies), else --policy resolves. */
  actor: TokenSampler | null;
  writer: SummaryWriterSpec;
  /** null for task folders (crl run --env harbor:PATH), which have no scripted expert or writers. */
  family: TaskFamily | null;
  tokenizer: LoadedTokenizer;
  seed: number;
  /** C, which a model's positions must cover. */
  contextWindow: number;
  /** --precision: the weight precision of embedded models (actor and writer). */
  precision: PrecisionChoice;
  /** The layout's tools format, for scripted policies; null: the text format. */
  agent: AgentProtocol | null;
}): Promise<{ actor: TokenSampler; summarizer: TokenSampler }> {
  const { family, tokenizer, seed, contextWindow, precision } = options;
  let actor = options.actor;
  if (!actor) {
    const source = await policySource({
      policy: options.policy,
      family,
      tokenizer,
      contextWindow,
      flag: '--policy',
      precision,
      agent: options.agent,
    });
    actor = source.factory(new Rng(mixSeed(seed, source.kind === 'model' ? 3 : 1)));
  }
  const writer = await summaryWriterSource({
    spec: options.writer,
    family,
    tokenizer,
    contextWindow,
    flag: '--summary-writer',
    precision,
    agent: options.agent,
  });
  // 'self': the same object as the actor, so the runner batches actions and summaries in one call.
  if (!writer) return { actor, summarizer: actor };
  const stream = writer.kind === 'model' ? mixSeed(mixSeed(seed, 2), 3) : mixSeed(seed, 2);
  return { actor, summarizer: writer.factory(new Rng(stream)) };
}
