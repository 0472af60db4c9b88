/**
 * Checkpoints: a directory a Hugging Face LlamaForCausalLM loader understands, plus our state.
 *   config.json                   HF config (hf-config.ts)
 *   model.safetensors             policy weights, HF names (no lm_head.weight when tied)
 *   optimizer.safetensors         policy AdamW moments: <name>.exp_avg, <name>.exp_avg_sq; step in metadata
 *   critic.safetensors            critic weights (trunk names + score.weight, score.bias), if any
 *   critic-optimizer.safetensors  critic AdamW moments, if any
 *   crl_tokenizer.json            the tokenizer (name, content hash) and the vocabulary map
 *                                 (docs/decisions/0013); absent in older checkpoints: word, full
 *                                 (checkpoint-tokenizer.ts)
 *   trainer_state.json            optimizer configs, the critic's layer count when it has fewer
 *                                 than the policy, free `meta`; written last, so its presence
 *                                 marks a complete checkpoint
 * A policy trained through LoRA adapters (model/lora/) writes the merged weights as model.safetensors,
 * so every reader takes it as any policy, and its adapter files (lora/peft-files.ts) in place of
 * optimizer.safetensors; trainer_state.json then says policyAdapter: "lora".
 * Every file is written with writeFileAtomic (temp name, fsync, rename, directory fsync).
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { OptimizerConfigSchema, type OptimizerConfig } from '../../optim/config.ts';
import { writeChunksAtomic, writeFileAtomic } from '../../util/atomic-write.ts';
import { criticConfig, CriticModel } from '../network/critic.ts';
import { fromHfConfig, toHfConfig } from './hf-config.ts';
import type { LlamaNetwork } from '../network/network.ts';
import { PolicyModel } from '../network/policy.ts';
import { paramCount, tensorSpecs, type HeadKind } from '../network/weights.ts';
import type { ModelConfig } from '../network/config.ts';
import { loadOptimizer, loadWeights, optimizerTensors, weightTensors } from './checkpoint-tensors.ts';
import { readVocabMap, writeVocabMap } from './checkpoint-tokenizer.ts';
import { CheckpointFormatError, openSafetensors, safetensorsChunks, type SafetensorsFile } from './safetensors.ts';

const FILES = {
  config: 'config.json',
  model: 'model.safetensors',
  optimizer: 'optimizer.safetensors',
  critic: 'critic.safetensors',
  criticOptimizer: 'critic-optimizer.safetensors',
  state: 'trainer_state.json',
} as const;

const TrainerStateSchema = z
  .object({
    format: z.literal('compaction-rl-checkpoint'),
    version: z.literal(1),
    policyOptimizer: OptimizerConfigSchema,
    criticOptimizer: OptimizerConfigSchema.nullable(),
    /** The critic's layers (the policy's first K, network/critic.ts); absent: the policy's count. */
    criticLayers: z.number().int().positive().optional(),
    /** The policy trained through adapters, whose files hold its optimizer state; absent: none. */
    policyAdapter: z.literal('lora').optional(),
    meta: z.unknown(),
  })
  .strict();

/** A policy's adapters: they write their own files, which hold the policy's optimizer state. */
export interface CheckpointAdapter {
  kind: 'lora';
  optimizer: OptimizerConfig;
  write(dir: string): void;
}

export async function saveCheckpoint(
  dir: string,
  {
    policy,
    critic,
    meta,
    adapter,
  }: { policy: PolicyModel; critic?: CriticModel; meta?: unknown; adapter?: CheckpointAdapter },
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const p = policy.net;
  writeFileAtomic(join(dir, FILES.config), JSON.stringify(toHfConfig(p.cfg), null, 2) + '\n');
  writeChunksAtomic(join(dir, FILES.model), safetensorsChunks(weightTensors(p), { format: 'pt' }));
  writeVocabMap(dir, policy.vocab);
  if (adapter) adapter.write(dir);
  else
    writeChunksAtomic(
      join(dir, FILES.optimizer),
      safetensorsChunks(optimizerTensors(p), { step: String(p.optimizer.state.step) }),
    );
  if (critic) {
    writeChunksAtomic(join(dir, FILES.critic), safetensorsChunks(weightTensors(critic.net), { format: 'pt' }));
    writeChunksAtomic(
      join(dir, FILES.criticOptimizer),
      safetensorsChunks(optimizerTensors(critic.net), { step: String(critic.net.optimizer.state.step) }),
    );
  }
  const state: z.infer<typeof TrainerStateSchema> = {
    format: 'compaction-rl-checkpoint',
    version: 1,
    policyOptimizer: adapter ? adapter.optimizer : p.optimizerConfig,
    criticOptimizer: critic ? critic.net.optimizerConfig : null,
    ...(adapter ? { policyAdapter: adapter.kind } : {}),
    // Written only for a smaller critic, so checkpoints of the method's critic stay as they were.
    ...(critic && critic.config.nLayers !== p.cfg.nLayers ? { criticLayers: critic.config.nLayers } : {}),
    meta: meta ?? null,
  };
  writeFileAtomic(join(dir, FILES.state), JSON.stringify(state, null, 2) + '\n');
}

async function readFileOrExplain(dir: string, name: string): Promise<Buffer> {
  try {
    return await readFile(join(dir, name));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CheckpointFormatError(`checkpoint ${dir} has no ${name} (incomplete or not a checkpoint directory)`);
    throw e;
  }
}

async function readJson(dir: string, name: string): Promise<unknown> {
  const text = (await readFileOrExplain(dir, name)).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new CheckpointFormatError(`${join(dir, name)} is not valid JSON`);
  }
}

async function readTrainerState(dir: string): Promise<z.infer<typeof TrainerStateSchema>> {
  const st = TrainerStateSchema.safeParse(await readJson(dir, FILES.state));
  if (!st.success)
    throw new CheckpointFormatError(
      `${join(dir, FILES.state)}: ${st.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  return st.data;
}

/**
 * Weights and AdamW moments (exact) of `dir` into existing networks; the critic only when given.
 * A policy trained through adapters has no moments of its own here (adapterOptimizer: the adapter
 * loads them).
 */
async function loadInto(
  dir: string,
  nets: { policy: LlamaNetwork; critic?: LlamaNetwork; adapterOptimizer?: boolean },
): Promise<void> {
  const load = (net: LlamaNetwork, name: string, into: typeof loadWeights) =>
    into(net, openOrExplain(dir, name), join(dir, name));
  load(nets.policy, FILES.model, loadWeights);
  if (!nets.adapterOptimizer) load(nets.policy, FILES.optimizer, loadOptimizer);
  if (nets.critic) {
    load(nets.critic, FILES.critic, loadWeights);
    load(nets.critic, FILES.criticOptimizer, loadOptimizer);
  }
}

/** A safetensors file of the checkpoint, read a tensor at a time (openSafetensors). */
function openOrExplain(dir: string, name: string): SafetensorsFile {
  try {
    return openSafetensors(join(dir, name), join(dir, name));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CheckpointFormatError(`checkpoint ${dir} has no ${name} (incomplete or not a checkpoint directory)`);
    throw e;
  }
}

export async function loadCheckpoint(
  dir: string,
): Promise<{ policy: PolicyModel; critic?: CriticModel; meta: unknown }> {
  const state = await readTrainerState(dir);
  const cfg = fromHfConfig(await readJson(dir, FILES.config), join(dir, FILES.config));
  const vocab = await readVocabMap(dir, cfg.vocabSize);
  const policy = new PolicyModel({ config: cfg, optim: state.policyOptimizer, params: emptyParams(cfg, 'lm'), vocab });
  const ccfg = criticConfigOf(state, cfg, dir);
  const critic = state.criticOptimizer
    ? new CriticModel({ config: ccfg, optim: state.criticOptimizer, params: emptyParams(ccfg, 'value'), vocab })
    : undefined;
  await loadInto(dir, {
    policy: policy.net,
    ...(critic ? { critic: critic.net } : {}),
    adapterOptimizer: state.policyAdapter !== undefined,
  });
  return { policy, ...(critic ? { critic } : {}), meta: state.meta };
}

/**
 * Resume: puts a checkpoint's weights and AdamW moments (step included, bit-exact) into models
 * that already exist, keeping their optimizer configs (the run's schedule). Every tensor must
 * match the models' shapes; a critic is required exactly when one is given.
 */
export async function restoreCheckpoint(
  dir: string,
  models: { policy: PolicyModel; critic?: CriticModel | null; adapter?: CheckpointAdapter['kind'] },
): Promise<void> {
  const state = await readTrainerState(dir);
  if (state.policyAdapter !== models.adapter)
    throw new CheckpointFormatError(
      state.policyAdapter
        ? `${dir} was written by a run that trains ${state.policyAdapter} adapters; this run trains every weight`
        : `${dir} was written by a run that trains every weight; this run trains ${models.adapter} adapters`,
    );
  const critic = models.critic ?? undefined;
  const vocab = await readVocabMap(dir, models.policy.config.vocabSize);
  const mine = models.policy.vocab;
  if (vocab.tokenizer.name !== mine.tokenizer.name || JSON.stringify(vocab.ids) !== JSON.stringify(mine.ids))
    throw new CheckpointFormatError(
      `${dir} was written for tokenizer ${vocab.tokenizer.name} with ${vocab.size} vocabulary entries; this model uses ${mine.tokenizer.name} with ${mine.size}`,
    );
  if (critic && !state.criticOptimizer)
    throw new CheckpointFormatError(`${dir} has no critic, but this run trains one`);
  if (critic) {
    const saved = criticConfigOf(state, models.policy.config, dir).nLayers;
    if (saved !== critic.config.nLayers)
      throw new CheckpointFormatError(
        `${dir} has a critic of ${saved} layers, this run's critic has ${critic.config.nLayers} (--critic-layers must match the run that wrote it)`,
      );
  }
  await loadInto(dir, {
    policy: models.policy.net,
    ...(critic ? { critic: critic.net } : {}),
    adapterOptimizer: models.adapter !== undefined,
  });
}

/** The shape of a checkpoint's critic: the policy's, with trainer_state.json's criticLayers. */
function criticConfigOf(state: z.infer<typeof TrainerStateSchema>, policy: ModelConfig, dir: string): ModelConfig {
  try {
    return criticConfig(policy, state.criticLayers);
  } catch (e) {
    throw new CheckpointFormatError(`${join(dir, FILES.state)}: ${(e as Error).message}`);
  }
}

/** A zero buffer of the right size: loadWeights fills every tensor, so no random init is needed. */
function emptyParams(cfg: ModelConfig, head: HeadKind): Float32Array {
  return new Float32Array(paramCount(tensorSpecs(cfg, head)));
}
