import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { engineSamplerFor } from '../../adapters/http-sampler.ts';
import { LlamaCppPolicy, LlamaCppSampler, llamaCppPolicyPath } from '../../adapters/llamacpp-sampler.ts';
import type { TaskFamily } from '../../env/family.ts';
import type { TextPolicy } from '../../contracts/index.ts';
import { formatSummaryWriter, type SummaryWriterSpec } from '../../eval/summary-writer.ts';
import { ggufTokenizerRef } from '../../model/formats/gguf-vocab.ts';
import { loadPolicyDir, readPolicyTokenizer } from '../../model/formats/load-policy.ts';
import { loadTokenizer, type LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { ModelSampler } from '../../model/sampler/sampler.ts';
import { checkTokenizer, tokenizerForCheckpoint } from '../../model/tokenizer/tokenizer-match.ts';
import type { PrecisionChoice } from '../../model/network/weight-precision.ts';
import { RUN_FILES } from '../../report/run-files.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import type { AgentProtocol } from '../../rollout/agent-format/agent-protocol.ts';
import type { TokenSampler } from '../../contracts/index.ts';
import type { Rng } from '../../util/random.ts';
import { latestCheckpoint } from '../runs/checkpoint-store.ts';

/**
 * What `--policy` and summary writers name, resolved once for crl run, crl eval and the pipeline:
 * 'expert' (the family's scripted expert), a remote engine `vllm:URL` / `sglang:URL`
 * (docs/decisions/0010), a GGUF file run by llama.cpp `llamacpp:FILE.gguf` (docs/decisions/0018),
 * a model checkpoint or Hugging Face directory, or a run directory (its latest checkpoint).
 * Every check (the file exists, the tokenizer, the vocabulary, the context window) lives here.
 */

/** A policy or writer that cannot be used as named; the message says what to do (exit 2). */
export class PolicySourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicySourceError';
  }
}

/** Makes a sampler from an rng: the acting policy or a writer. */
export type SamplerFactory = (rng: Rng) => TokenSampler;

/**
 * A resolved policy. `kind` says what samples: a scripted text policy, a remote engine (which
 * samples with its own randomness and ignores the rng) or a model run in this process; `source`
 * names it (for a run directory, the checkpoint it stands for).
 */
export interface PolicySource {
  factory: SamplerFactory;
  kind: 'scripted' | 'engine' | 'model';
  source: string;
}

const POLICY_FORMS = '"expert", vllm:URL, sglang:URL, llamacpp:FILE.gguf, a checkpoint directory or a run directory';
const ENGINE = /^(vllm|sglang):/;

/** A run directory stands for its latest checkpoint; any other path is taken as a checkpoint. */
export function resolveCheckpointDir(path: string): string {
  if (existsSync(join(path, RUN_FILES.checkpoints))) {
    const latest = latestCheckpoint(path);
    if (!latest) throw new PolicySourceError(`run ${path} has no checkpoint yet`);
    return latest.dir;
  }
  if (!existsSync(path)) throw new PolicySourceError(`${JSON.stringify(path)}: no such checkpoint or run directory`);
  return path;
}

/**
 * The cheap checks (no model is loaded), for commands that validate every input before they touch
 * an output: the GGUF file or the directory exists. `flag` names the input in messages.
 */
export function checkPolicy(options: { policy: string; flag: string }): void {
  const { policy, flag } = options;
  if (policy === 'expert' || ENGINE.test(policy)) return;
  const gguf = llamaCppPolicyPath(policy);
  if (gguf) {
    if (!existsSync(gguf) || !statSync(gguf).isFile())
      throw new PolicySourceError(`${flag}: no such GGUF file ${gguf} (write one with crl export --format gguf)`);
    return;
  }
  if (!existsSync(policy))
    throw new PolicySourceError(
      `${flag}: ${JSON.stringify(policy)} is neither "expert", vllm:URL, sglang:URL, llamacpp:FILE.gguf nor a checkpoint or run directory`,
    );
  let dir: string;
  try {
    dir = resolveCheckpointDir(policy);
  } catch (e) {
    if (e instanceof PolicySourceError) throw new PolicySourceError(`${flag}: ${e.message}`);
    throw e;
  }
  if (!statSync(dir).isDirectory())
    throw new PolicySourceError(`${flag}: expected ${POLICY_FORMS}, but ${JSON.stringify(policy)} is not a directory`);
}

/**
 * The tokenizer a command runs with for this --policy: `given` (--tokenizer) if set, checked
 * against the policy's own; else the policy's own (a checkpoint's crl_tokenizer.json, a Hugging
 * Face directory's tokenizer.json, the one a GGUF file from crl export names); else (expert,
 * engine, a GGUF file from elsewhere) word.
 */
export async function tokenizerForPolicy(options: {
  policy: string;
  given?: string;
  flag?: string;
}): Promise<LoadedTokenizer> {
  const { policy, given } = options;
  if (policy === 'expert' || ENGINE.test(policy)) return loadTokenizer(given ?? 'word');
  checkPolicy({ policy, flag: options.flag ?? 'policy' });
  const gguf = llamaCppPolicyPath(policy);
  if (gguf) {
    // crl export names the tokenizer in compaction_rl.* keys; a file from elsewhere names none.
    const ref = ggufTokenizerRef((await LlamaCppPolicy.load(gguf)).model.fileInfo.metadata);
    if (!ref) return loadTokenizer(given ?? 'word');
    return tokenizerForCheckpoint({ what: `GGUF file ${gguf}`, ref, given });
  }
  const dir = resolveCheckpointDir(policy);
  return tokenizerForCheckpoint({ what: `checkpoint ${dir}`, ref: await readPolicyTokenizer(dir), given });
}

/**
 * Resolves a policy and checks it can run here: a model must speak `tokenizer` and cover the
 * context window C. `family` is null for task folders, which have no scripted expert.
 */
export async function policySource(options: {
  policy: string;
  family: TaskFamily | null;
  tokenizer: LoadedTokenizer;
  contextWindow: number;
  /** How messages name the input: '--policy', '--summary-writer' (default 'policy'). */
  flag?: string;
  /** The embedded sampler's weight precision (weight-precision.ts; default 'auto'). */
  precision?: PrecisionChoice;
  /** The layout's tools format (a scripted policy then writes tool calls); absent or null: text. */
  agent?: AgentProtocol | null;
}): Promise<PolicySource> {
  const { policy, family, tokenizer, contextWindow } = options;
  const flag = options.flag ?? 'policy';
  checkPolicy({ policy, flag });
  if (policy === 'expert') {
    if (!family)
      throw new PolicySourceError(
        `${flag} expert: task folders have no scripted expert; use harbor-oracle, a checkpoint or an engine`,
      );
    return {
      kind: 'scripted',
      source: 'expert',
      factory: (rng) =>
        textPolicySampler({ tokenizer, policy: family.expert, rng, agent: options.agent, reasoner: family.reasoner }),
    };
  }
  const remote = engineSamplerFor(policy); // a bad URL is an EngineError: a user error with its reason
  // Each sampler made gets a seed of its own for its episode requests (engine-protocols.ts withRequestSeed).
  if (remote)
    return { kind: 'engine', source: policy, factory: (rng) => engineSamplerFor(policy, { seed: rng.nextUint32() })! };
  const fits = `pass --context {n} or less (with a matching --threshold)`;
  const gguf = llamaCppPolicyPath(policy);
  if (gguf) {
    // Loaded once per file and process; each sampler gets its own context.
    const model = await LlamaCppPolicy.load(gguf);
    // A file crl export wrote names its tokenizer (and a trimmed vocabulary maps ids to its rows).
    if (ggufTokenizerRef(model.model.fileInfo.metadata))
      checkTokenizer({ what: `${flag} ${policy}`, ref: model.vocab.tokenizer, tokenizer });
    const vocab = tokenizer.tokenizer.vocabSize;
    if (model.vocab.isIdentity && model.vocabSize < vocab)
      throw new PolicySourceError(
        `${flag} ${policy}: the model's vocabulary has ${model.vocabSize} tokens, the tokenizer ${vocab}`,
      );
    if (model.contextSize < contextWindow)
      throw new PolicySourceError(
        `${flag} ${policy}: the model's context length ${model.contextSize} is below the context window ${contextWindow}; ${fits.replace('{n}', String(model.contextSize))}`,
      );
    return {
      kind: 'model',
      source: policy,
      factory: (rng) => new LlamaCppSampler({ policy: model, rng, contextSize: contextWindow }),
    };
  }
  const dir = resolveCheckpointDir(policy);
  const { policy: model } = await loadPolicyDir(dir);
  checkTokenizer({ what: `checkpoint ${dir}`, ref: model.vocab.tokenizer, tokenizer });
  const { maxSeqLen } = model.config;
  if (maxSeqLen < contextWindow)
    throw new PolicySourceError(
      `${flag} ${dir}: the model's maxSeqLen ${maxSeqLen} is below the context window ${contextWindow}; ${fits.replace('{n}', String(maxSeqLen))}`,
    );
  const precision = options.precision ?? 'auto';
  return { kind: 'model', source: dir, factory: (rng) => new ModelSampler({ policy: model, rng, precision }) };
}

const nullWriter: TextPolicy = () => '';

/** Scripted summary writers by kind (registry, not branches). */
const TEXT_WRITERS: Record<'oracle' | 'lossy', (family: TaskFamily, spec: SummaryWriterSpec) => TextPolicy> = {
  oracle: (family) => family.summaryWriters.oracle,
  lossy: (family, spec) =>
    spec.kind === 'lossy' ? family.summaryWriters.lossy(spec.p, spec.goalP) : family.summaryWriters.lossy(0),
};

/**
 * The summary writer (method §8, Table 1: only the writer changes): null for 'self' (the actor
 * writes its own summaries), a scripted writer, or a model resolved as `--policy` is.
 */
export async function summaryWriterSource(options: {
  spec: SummaryWriterSpec;
  family: TaskFamily | null;
  tokenizer: LoadedTokenizer;
  contextWindow: number;
  /** How messages name the input (default 'summary writer'). */
  flag?: string;
  /** A model writer's weight precision (weight-precision.ts; default 'auto'). */
  precision?: PrecisionChoice;
  /** The layout's tools format (a scripted policy then writes tool calls); absent or null: text. */
  agent?: AgentProtocol | null;
}): Promise<PolicySource | null> {
  const { spec, family, tokenizer } = options;
  const flag = options.flag ?? 'summary writer';
  if (spec.kind === 'self') return null;
  if (spec.kind === 'checkpoint')
    return policySource({
      policy: spec.path,
      family,
      tokenizer,
      contextWindow: options.contextWindow,
      flag,
      ...(options.precision ? { precision: options.precision } : {}),
      agent: options.agent,
    });
  let text = nullWriter;
  if (spec.kind !== 'null') {
    if (!family) throw new PolicySourceError(`${flag} ${spec.kind} needs a task family`);
    text = TEXT_WRITERS[spec.kind](family, spec);
  }
  return {
    kind: 'scripted',
    source: formatSummaryWriter(spec),
    factory: (rng) => textPolicySampler({ tokenizer, policy: text, rng, agent: options.agent }),
  };
}
