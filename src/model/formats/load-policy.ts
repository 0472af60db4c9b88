import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { OptimizerConfig } from '../../optim/config.ts';
import { loadCheckpoint } from './checkpoint.ts';
import { readVocabMap } from './checkpoint-tokenizer.ts';
import type { CriticModel } from '../network/critic.ts';
import { isHfModelDir, loadHfModel } from './hf-import.ts';
import { loadTokenizer } from '../tokenizer/load-tokenizer.ts';
import type { PolicyModel } from '../network/policy.ts';
import { CheckpointFormatError } from './safetensors.ts';
import { VocabMap, type TokenizerRef } from '../tokenizer/vocab-map.ts';

/**
 * A policy from a directory that is either one of our checkpoints (trainer_state.json marks it;
 * checkpoint.ts) or a Hugging Face model directory (config.json + safetensors; hf-import.ts),
 * which loads with fresh optimizer state and no critic. What `--policy` and `--init` take.
 */
export async function loadPolicyDir(
  dir: string,
  options: { optim?: OptimizerConfig } = {},
): Promise<{ policy: PolicyModel; critic?: CriticModel; meta: unknown; source: 'checkpoint' | 'hf' }> {
  if (existsSync(join(dir, 'trainer_state.json'))) return { ...(await loadCheckpoint(dir)), source: 'checkpoint' };
  if (isHfModelDir(dir)) {
    const { policy } = await loadHfModel(dir, { ...options, vocab: (size) => hfVocab(dir, size) });
    return { policy, meta: null, source: 'hf' };
  }
  if (!existsSync(dir)) throw new CheckpointFormatError(`${dir}: no such checkpoint or model directory`);
  throw new CheckpointFormatError(
    `${dir} is neither a checkpoint (no trainer_state.json) nor a Hugging Face model directory (config.json with model.safetensors or model.safetensors.index.json)`,
  );
}

/**
 * The vocabulary a Hugging Face directory's model speaks: crl_tokenizer.json when crl export wrote
 * it, else the directory's own tokenizer.json (named by the directory, as --tokenizer DIR names
 * it), else the word vocabulary. `size` null: sized later by the model.
 */
export async function hfVocab(dir: string, size: number | null): Promise<VocabMap | undefined> {
  if (existsSync(join(dir, 'crl_tokenizer.json'))) return readVocabMap(dir, size);
  if (!existsSync(join(dir, 'tokenizer.json'))) return undefined;
  const t = loadTokenizer(resolve(dir));
  return VocabMap.identity(size ?? 0, { name: t.name, sha256: t.sha256 });
}

/** The tokenizer a policy directory (checkpoint or Hugging Face directory) names. */
export async function readPolicyTokenizer(dir: string): Promise<TokenizerRef> {
  if (!existsSync(join(dir, 'trainer_state.json')) && isHfModelDir(dir)) {
    const v = await hfVocab(dir, null);
    return v ? v.tokenizer : { name: 'word' };
  }
  return (await readVocabMap(dir, null)).tokenizer;
}
