import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { OptimizerConfig } from '../optim/config.ts';
import { loadCheckpoint } from './checkpoint.ts';
import type { CriticModel } from './critic.ts';
import { isHfModelDir, loadHfModel } from './hf-import.ts';
import type { PolicyModel } from './policy.ts';
import { CheckpointFormatError } from './safetensors.ts';

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
    const { policy } = await loadHfModel(dir, options);
    return { policy, meta: null, source: 'hf' };
  }
  if (!existsSync(dir)) throw new CheckpointFormatError(`${dir}: no such checkpoint or model directory`);
  throw new CheckpointFormatError(
    `${dir} is neither a checkpoint (no trainer_state.json) nor a Hugging Face model directory (config.json with model.safetensors or model.safetensors.index.json)`,
  );
}
