import { TorchTrainer } from '../../adapters/torch/torch-trainer.ts';
import { ConfigError } from '../../config/config-error.ts';
import type { TrainConfig } from '../../config/train-config.ts';
import type { TrainerModels } from './trainer-models.ts';

/**
 * The trainer's models with the update on a PyTorch process (config.trainer, docs/torch-trainer.md).
 * The embedded policy and critic stay as mirrors: the sampler acts with the policy's weights,
 * pulled after every update, and checkpoints are written from them after pulling weights and
 * AdamW moments, so a checkpoint (and `--resume` from it, which loads it back into the process)
 * is the same file whichever engine trained. With LoRA adapters (models.lora) the process gets the
 * frozen base and crl's A and B, steps only those, and sends them back; crl merges them onto its
 * own base, so the sampler and the checkpoint read merged weights as in an embedded LoRA run.
 */
export function withTorchTrainer(models: TrainerModels, trainer: NonNullable<TrainConfig['trainer']>): TrainerModels {
  // The PyTorch trainer builds both networks with the policy's shape.
  if (models.critic && models.critic.config.nLayers !== models.policy.config.nLayers)
    throw new ConfigError([
      `model.criticLayers: the torch trainer trains a critic of the policy's ${models.policy.config.nLayers} layers only; leave out --critic-layers or --trainer torch`,
    ]);
  const command = trainer.command?.split(/\s+/).filter((s) => s.length > 0);
  const torch = TorchTrainer.start({
    ...(command ? { command } : {}),
    ...(trainer.procs !== undefined ? { procs: trainer.procs } : {}),
    ...(trainer.url !== undefined ? { url: trainer.url } : {}),
    timeoutMs: trainer.timeoutSec * 1000,
  });
  const lora = models.lora ?? null;
  torch.init({ policy: models.policy, critic: models.critic, lora });
  const pullPolicy = (optimizer: boolean) =>
    lora ? torch.pullLora(lora, { optimizer }) : torch.pullInto('policy', models.policy.net, { optimizer });
  const pullAll = () => {
    pullPolicy(true);
    if (models.critic) torch.pullInto('critic', models.critic.net, { optimizer: true });
  };
  let closed = false;
  return {
    ...models,
    save: async (dir, meta) => {
      pullAll();
      await models.save(dir, meta);
    },
    restore: async (dir) => {
      await models.restore(dir);
      torch.init({ policy: models.policy, critic: models.critic, lora });
    },
    trainable: {
      policy: torch.policy,
      critic: models.critic ? torch.critic : null,
      afterUpdate: () => pullPolicy(false),
      takeTiming: () => torch.takeTiming(),
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          pullAll(); // the caller's models end on the trainer's final weights
        } catch {
          // the trainer is gone: the error that ended the run says why
        }
        await torch.close();
      },
    },
  };
}
