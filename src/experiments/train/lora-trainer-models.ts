import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../../config/config-error.ts';
import type { TrainConfig } from '../../config/train-config.ts';
import type { TrainablePolicy } from '../../contracts/index.ts';
import type { CheckpointAdapter } from '../../model/formats/checkpoint.ts';
import type { PolicyModel } from '../../model/network/policy.ts';
import { loadPolicyDir } from '../../model/formats/load-policy.ts';
import { baseWeightsHash } from '../../model/lora/base-hash.ts';
import { LoraAdapter, type LoraStorage } from '../../model/lora/lora-adapter.ts';
import { nativeAddon } from '../../tensor/native.ts';
import { loraMatrices, loraProblem, resolveLora, type LoraSettings } from '../../model/lora/lora-config.ts';
import { hasPeftAdapter, loadPeftAdapter, readPeftAdapterInfo, writePeftAdapter } from '../../model/lora/peft-files.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import type { OptimizerConfig } from '../../optim/config.ts';

/** The LoRA adapters' initial A draws from a stream of its own, so adding them moves no other draw. */
const LORA_SEED = 0x4c6f5241;

/** What the trainer's models need of a policy trained through LoRA adapters. */
export interface LoraPolicy {
  /** The adapters on the policy's network (the PyTorch trainer gets them at init and steps them there). */
  lora: LoraAdapter;
  /** Writes the adapter's files into a checkpoint (in place of the policy's optimizer state). */
  adapter: CheckpointAdapter;
  /** What the PPO update steps: the policy's forward and backward, the adapters' step. */
  trainable: TrainablePolicy;
  /** After restoreCheckpoint(dir): the adapters and their moments from `dir`, merged. */
  restore(dir: string): void;
  /** Writes the adapter alone, without its AdamW moments, into `dir` (a push to engines that load adapters). */
  writeForEngines(dir: string): void;
}

/**
 * LoRA adapters on the policy (config.model.lora, docs/lora.md); null without. The base is frozen,
 * A and B are stepped by their own AdamW, and the policy's weights are the merged W0 + s B A after
 * every step, so the sampler reads them as it reads any policy. Checkpoints hold the merged weights
 * and the adapter as PEFT saves it (lora/peft-files.ts). An --init that is itself a LoRA run
 * continues its adapters on its base, once the base's weights are checked against the hash the
 * adapters were saved with.
 */
export async function loraPolicy({
  config,
  policy,
  optim,
}: {
  config: TrainConfig;
  policy: PolicyModel;
  /** The adapters' AdamW: the policy's learning rate and schedule. */
  optim: OptimizerConfig;
}): Promise<LoraPolicy | null> {
  const section = config.model.lora;
  if (!section) return null;
  const settings = resolveLora(section);
  const problem = loraProblem(
    settings,
    loraMatrices({ specs: policy.net.specs, cfg: policy.config, targets: settings.targets }),
  );
  if (problem) throw new ConfigError([problem]);
  const init = config.model.init;
  const continued = init && hasPeftAdapter(init) ? await continuedBase({ init, settings, policy }) : null;
  const baseModel = continued?.baseModel ?? (init ? resolve(init) : 'compaction-rl/fresh');
  const baseSha256 = baseWeightsHash(policy.net.params);
  const lora = new LoraAdapter({
    net: policy.net,
    settings,
    optim,
    rng: new Rng(mixSeed(config.seed, LORA_SEED)),
    storage: loraStorage(config),
  });
  if (continued) loadPeftAdapter({ dir: init!, lora, optimizer: false });
  lora.merge();
  return {
    lora,
    adapter: {
      kind: 'lora',
      optimizer: lora.optimizer.cfg,
      write: (dir) => writePeftAdapter({ dir, lora, baseModel, baseSha256 }),
    },
    trainable: {
      forward: (tokens, options) => policy.forward(tokens, options),
      backward: (grads) => policy.backward(grads),
      step: () => lora.step(),
    },
    restore: (dir) => {
      // The checkpoint's merged weights were just read into the released layer products: release them again.
      if (lora.layers) policy.net.releaseRanges(lora.layers.ranges());
      loadPeftAdapter({ dir, lora, optimizer: true });
      lora.merge();
    },
    writeForEngines: (dir) => writePeftAdapter({ dir, lora, baseModel, baseSha256, optimizer: false }),
  };
}

/**
 * Where the policy's merged weights live (lora-adapter.ts LoraStorage): nowhere ('base': the
 * frozen base in bf16, each layer merged when read; 2.4 GB less at Qwen3-0.6B) when the update
 * runs here and the sampler reads a prepared copy (the native addon packs f32 too); 'merged' for
 * the PyTorch trainer, whose init lends it the base's f32 weights (withBaseWeights), and without
 * the addon, where an f32 sampler reads the network's weights themselves.
 */
export function loraStorage(config: TrainConfig): LoraStorage {
  return !config.trainer && nativeAddon ? 'base' : 'merged';
}

/**
 * --init names a LoRA run's checkpoint: its settings must be these, and its base (adapter_config's
 * base_model_name_or_path) must still hold the weights the adapters were trained on. The policy's
 * weights become that base; the caller loads the adapters onto it.
 */
async function continuedBase({
  init,
  settings,
  policy,
}: {
  init: string;
  settings: LoraSettings;
  policy: PolicyModel;
}): Promise<{ baseModel: string }> {
  const info = readPeftAdapterInfo(init);
  const saved = info.settings;
  const differ = (flag: string, mine: unknown, theirs: unknown) =>
    `--${flag}: ${JSON.stringify(mine)} differs from the ${JSON.stringify(theirs)} of the adapters in --init ${init} (continue them with the same settings, or start from a full checkpoint)`;
  const problems = [
    ...(saved.rank !== settings.rank ? [differ('lora-rank', settings.rank, saved.rank)] : []),
    ...(saved.alpha !== settings.alpha ? [differ('lora-alpha', settings.alpha, saved.alpha)] : []),
    ...(saved.targets.join() !== settings.targets.join()
      ? [differ('lora-targets', settings.targets.join(','), saved.targets.join(','))]
      : []),
  ];
  if (problems.length) throw new ConfigError(problems);
  const base = info.baseModel;
  if (!base || !existsSync(base) || !info.baseSha256)
    throw new ConfigError([
      `--init: the adapters in ${init} name no base crl can check (base_model_name_or_path ${base ?? 'absent'}${info.baseSha256 ? '' : ', no crl_adapter.json'})`,
    ]);
  const loaded = (await loadPolicyDir(base)).policy;
  if (loaded.net.params.length !== policy.net.params.length)
    throw new ConfigError([`--init: the base ${base} of the adapters in ${init} is not the shape of ${init}'s model`]);
  const hash = baseWeightsHash(loaded.net.params);
  if (hash !== info.baseSha256)
    throw new ConfigError([
      `--init: the adapters in ${init} were made for another base: ${base} now holds weights with hash ${hash.slice(0, 12)}, the adapters were trained on ${info.baseSha256.slice(0, 12)}`,
    ]);
  policy.net.params.set(loaded.net.params);
  policy.net.markWeightsChanged();
  return { baseModel: base };
}
