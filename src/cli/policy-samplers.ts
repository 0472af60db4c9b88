import { existsSync, statSync } from 'node:fs';
import { engineSamplerFor } from '../adapters/http-sampler.ts';
import { LlamaCppPolicy, LlamaCppSampler, llamaCppPolicyPath } from '../adapters/llamacpp-sampler.ts';
import { loadPolicyDir } from '../model/load-policy.ts';
import { checkTokenizer } from '../model/tokenizer-match.ts';
import { ModelSampler } from '../model/sampler.ts';
import type { TaskFamily, TextPolicy } from '../env/family.ts';
import { textPolicySampler } from '../rollout/text-policy-sampler.ts';
import type { LoadedTokenizer } from '../model/load-tokenizer.ts';
import type { TokenSampler } from '../rollout/types.ts';
import { mixSeed, Rng } from '../util/random.ts';
import { resolveCheckpointDir } from '../experiments/policy-source.ts';
import { CliError } from './errors.ts';
import type { SummaryWriterChoice } from './run-flags.ts';

/** The acting policy for `crl run --policy`: the family's expert, a checkpoint directory, an engine or a GGUF file. */
export async function actorSampler(options: {
  policy: string;
  /** null for task folders (crl run --env harbor:PATH), which have no scripted expert. */
  family: TaskFamily | null;
  tokenizer: LoadedTokenizer;
  seed: number;
  /** C, which the model's maxSeqLen must cover. */
  contextWindow: number;
}): Promise<TokenSampler> {
  const { policy, family, tokenizer, seed } = options;
  if (policy === 'expert') {
    if (!family)
      throw new CliError(
        '--policy expert: task folders have no scripted expert; use harbor-oracle, a checkpoint or an engine',
      );
    return textPolicySampler({ tokenizer, policy: family.expert, rng: new Rng(mixSeed(seed, 1)) });
  }
  const remote = engineSamplerFor(policy); // a bad URL is an EngineError: a user error with its reason
  if (remote) return remote;
  const gguf = llamaCppPolicyPath(policy);
  if (gguf) return ggufSampler({ path: gguf, seed, tokenizer, contextWindow: options.contextWindow, flag: '--policy' });
  if (!existsSync(policy) || !statSync(policy).isDirectory()) {
    throw new CliError(
      `--policy: expected "expert", vllm:URL, sglang:URL, llamacpp:FILE.gguf, a checkpoint directory or a run directory, but ${JSON.stringify(policy)} is not a directory`,
    );
  }
  let dir: string;
  try {
    dir = resolveCheckpointDir(policy); // a run directory stands for its latest checkpoint, as in crl eval
  } catch (e) {
    throw new CliError(`--policy: ${(e as Error).message}`);
  }
  return checkpointSampler({ dir, seed, tokenizer, contextWindow: options.contextWindow });
}

const nullWriter: TextPolicy = () => '';

/** Scripted summary writers by name (registry, not branches). */
const TEXT_WRITERS: Record<
  'oracle' | 'null' | 'lossy',
  (family: TaskFamily, choice: SummaryWriterChoice) => TextPolicy
> = {
  oracle: (family) => family.summaryWriters.oracle,
  null: () => nullWriter,
  lossy: (family, choice) =>
    choice.kind === 'lossy' ? family.summaryWriters.lossy(choice.p, choice.goalP) : family.summaryWriters.lossy(0),
};

export async function summarySampler(options: {
  choice: SummaryWriterChoice;
  /** null for task folders: only self, null and checkpoint writers (crl run checks before). */
  family: TaskFamily | null;
  actor: TokenSampler;
  tokenizer: LoadedTokenizer;
  seed: number;
  contextWindow: number;
}): Promise<TokenSampler> {
  const { choice, family, actor, tokenizer, seed } = options;
  // The same object as the actor: the runner then batches actions and summaries in one call.
  if (choice.kind === 'self') return actor;
  if (choice.kind === 'checkpoint') {
    const gguf = llamaCppPolicyPath(choice.path);
    if (gguf)
      return ggufSampler({
        path: gguf,
        seed: mixSeed(seed, 2),
        tokenizer,
        contextWindow: options.contextWindow,
        flag: '--summary-writer',
      });
    return checkpointSampler({
      dir: choice.path,
      seed: mixSeed(seed, 2),
      tokenizer,
      contextWindow: options.contextWindow,
    });
  }
  if (!family && choice.kind !== 'null') throw new CliError(`--summary-writer ${choice.kind} needs a task family`);
  const policy = family ? TEXT_WRITERS[choice.kind](family, choice) : nullWriter;
  return textPolicySampler({ tokenizer, policy, rng: new Rng(mixSeed(seed, 2)) });
}

/**
 * The embedded model as a sampler: src/model/checkpoint.ts loads the policy, ModelSampler runs it
 * with a KV cache. The model must cover the vocabulary and the context window C.
 */
async function checkpointSampler(options: {
  dir: string;
  seed: number;
  tokenizer: LoadedTokenizer;
  contextWindow: number;
}): Promise<TokenSampler> {
  const { policy } = await loadPolicyDir(options.dir);
  const cfg = policy.config;
  checkTokenizer({ what: `checkpoint ${options.dir}`, ref: policy.vocab.tokenizer, tokenizer: options.tokenizer });
  if (cfg.maxSeqLen < options.contextWindow) {
    throw new CliError(
      `--policy ${options.dir}: the model's maxSeqLen ${cfg.maxSeqLen} is below the context window ${options.contextWindow}; pass --context ${cfg.maxSeqLen} or less (with a matching --threshold)`,
    );
  }
  return new ModelSampler({ policy, rng: new Rng(mixSeed(options.seed, 3)) });
}

/**
 * A GGUF file run by llama.cpp (adapters/llamacpp-sampler.ts); like a checkpoint, it must cover the
 * vocabulary and the context window C.
 */
async function ggufSampler(options: {
  path: string;
  seed: number;
  tokenizer: LoadedTokenizer;
  contextWindow: number;
  flag: string;
}): Promise<TokenSampler> {
  const { path, flag } = options;
  if (!existsSync(path) || !statSync(path).isFile())
    throw new CliError(`${flag} llamacpp:${path}: no such GGUF file (write one with crl export --format gguf)`);
  const policy = await LlamaCppPolicy.load(path);
  if (policy.vocabSize < options.tokenizer.tokenizer.vocabSize)
    throw new CliError(
      `${flag} llamacpp:${path}: the model's vocabulary has ${policy.vocabSize} tokens, the tokenizer ${options.tokenizer.tokenizer.vocabSize}`,
    );
  if (policy.contextSize < options.contextWindow)
    throw new CliError(
      `${flag} llamacpp:${path}: the model's context length ${policy.contextSize} is below the context window ${options.contextWindow}; pass --context ${policy.contextSize} or less (with a matching --threshold)`,
    );
  return new LlamaCppSampler({ policy, rng: new Rng(mixSeed(options.seed, 3)) });
}
