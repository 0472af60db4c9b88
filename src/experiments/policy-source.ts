import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { engineSamplerFor } from '../adapters/http-sampler.ts';
import { LlamaCppPolicy, LlamaCppSampler, llamaCppPolicyPath } from '../adapters/llamacpp-sampler.ts';
import type { TaskFamily } from '../env/family.ts';
import { loadPolicyDir } from '../model/load-policy.ts';
import { readCheckpointTokenizer } from '../model/checkpoint.ts';
import { loadTokenizer } from '../model/load-tokenizer.ts';
import { checkTokenizer, tokenizerForCheckpoint } from '../model/tokenizer-match.ts';
import { ModelSampler } from '../model/sampler.ts';
import { RUN_FILES } from '../report/run-files.ts';
import { textPolicySampler } from '../rollout/text-policy-sampler.ts';
import type { LoadedTokenizer } from '../model/load-tokenizer.ts';
import { latestCheckpoint } from './checkpoint-store.ts';
import type { SamplerFactory } from './eval-runner.ts';

/**
 * Resolves what `--policy` (and `checkpoint:PATH` writers) name: 'expert', a model checkpoint
 * directory, or a run directory (its latest checkpoint). `policySamplerFactory` also takes a
 * remote engine, `vllm:URL` or `sglang:URL` (docs/decisions/0010), and a GGUF file run by
 * llama.cpp, `llamacpp:FILE.gguf` (docs/decisions/0015).
 */
export function resolveCheckpointDir(path: string): string {
  if (existsSync(join(path, RUN_FILES.checkpoints))) {
    const latest = latestCheckpoint(path);
    if (!latest) throw new Error(`run ${path} has no checkpoint yet`);
    return latest.dir;
  }
  if (!existsSync(path)) throw new Error(`${JSON.stringify(path)}: no such checkpoint or run directory`);
  return path;
}

/**
 * The tokenizer a command runs with for this --policy: `given` (--tokenizer) if set, checked
 * against a checkpoint's own; else the checkpoint's own; else (expert, remote engine) word.
 */
export async function tokenizerForPolicy(options: { policy: string; given?: string }): Promise<LoadedTokenizer> {
  if (options.policy === 'expert' || /^(vllm|sglang|llamacpp):/.test(options.policy))
    return loadTokenizer(options.given ?? 'word');
  if (!existsSync(options.policy))
    throw new Error(
      `${JSON.stringify(options.policy)} is neither "expert", vllm:URL, sglang:URL, llamacpp:FILE.gguf nor a checkpoint or run directory`,
    );
  const dir = resolveCheckpointDir(options.policy);
  const ref = await readCheckpointTokenizer(dir);
  return tokenizerForCheckpoint({ what: `checkpoint ${dir}`, ref, given: options.given });
}

export async function policySamplerFactory(options: {
  policy: string;
  family: TaskFamily;
  tokenizer: LoadedTokenizer;
}): Promise<{ factory: SamplerFactory; source: string }> {
  if (options.policy === 'expert') {
    return {
      factory: (rng) => textPolicySampler({ tokenizer: options.tokenizer, policy: options.family.expert, rng }),
      source: 'expert',
    };
  }
  // The engine samples with its own randomness; one client serves every sample.
  const remote = engineSamplerFor(options.policy);
  if (remote) return { factory: () => remote, source: options.policy };
  // A GGUF file run by llama.cpp: loaded once, a context per sampler.
  const gguf = llamaCppPolicyPath(options.policy);
  if (gguf) {
    if (!existsSync(gguf)) throw new Error(`policy ${JSON.stringify(options.policy)}: no such GGUF file`);
    const policy = await LlamaCppPolicy.load(gguf);
    return { factory: (rng) => new LlamaCppSampler({ policy, rng }), source: options.policy };
  }
  const dir = resolveCheckpointDir(options.policy);
  const { policy } = await loadPolicyDir(dir);
  checkTokenizer({ what: `checkpoint ${dir}`, ref: policy.vocab.tokenizer, tokenizer: options.tokenizer });
  return { factory: (rng) => new ModelSampler({ policy, rng }), source: dir };
}
