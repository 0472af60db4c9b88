import type { TaskFamily } from '../env/family.ts';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.ts';
import { CriticModel } from '../model/critic.ts';
import { modelConfig } from '../model/config.ts';
import type { LlamaNetwork } from '../model/network.ts';
import { PolicyModel } from '../model/policy.ts';
import { ModelSampler } from '../model/sampler.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../optim/config.ts';
import { textPolicySampler } from '../rollout/text-policy-sampler.ts';
import type { TokenSampler, Tokenizer } from '../rollout/types.ts';
import type { Rng } from '../util/random.ts';
import type { TrainConfig } from '../config/train-config.ts';

/**
 * What the training loop holds: the policy and critic models, a sampler that follows the policy's
 * live weights (spec §6 "publish new weights": the ModelSampler reads the same buffer), and
 * checkpoint save/restore in the model's format (weights + AdamW moments, exact).
 */
export interface TrainerModels {
  policy: PolicyModel;
  critic: CriticModel | null;
  sampler(rng: Rng): TokenSampler;
  save(dir: string, meta: unknown): Promise<void>;
  restore(dir: string): Promise<void>;
}

/**
 * Which sampler acts during training: the policy itself (real training), or the family's scripted
 * expert ('expert': plumbing smoke tests only; the policy then learns nothing useful).
 */
export type ActorKind = 'policy' | 'expert';

function copyNet(dst: LlamaNetwork, src: LlamaNetwork): void {
  if (dst.params.length !== src.params.length) throw new Error(`checkpoint has ${src.params.length} parameters, this run's model has ${dst.params.length} (different model preset?)`);
  dst.params.set(src.params);
  dst.optimizer.state.m.set(src.optimizer.state.m);
  dst.optimizer.state.v.set(src.optimizer.state.v);
  dst.optimizer.state.step = src.optimizer.state.step;
}

/**
 * Builds policy and critic: from the config's model preset (vocabulary and sequence length fitted
 * to the tokenizer and C), or from model.init (the SFT base) with fresh optimizer state. The
 * critic starts as a copy of the policy trunk (spec §6).
 */
export async function buildTrainerModels(options: {
  config: TrainConfig;
  tokenizer: Tokenizer;
  family: TaskFamily;
  needsCritic: boolean;
  actor: ActorKind;
  rng: Rng;
}): Promise<TrainerModels> {
  const { config, tokenizer, family, rng } = options;
  const optim = (lr: number): OptimizerConfig => ({
    ...DEFAULT_OPTIMIZER,
    lr,
    gradClip: config.optim.gradClip,
    weightDecay: config.optim.weightDecay,
    warmupSteps: config.optim.warmupSteps,
    // Upper bound on optimizer steps; the cosine then decays over the run, not past it.
    totalSteps: Math.max(1, config.iterations * config.ppo.epochs * config.ppo.criticUpdatesPerPolicyUpdate * 4),
  });
  let policy: PolicyModel;
  if (config.model.init) {
    const init = await loadCheckpoint(config.model.init);
    policy = new PolicyModel({ config: init.policy.config, optim: optim(config.optim.policyLr), params: init.policy.net.params });
  } else {
    const mcfg = modelConfig(config.model.preset, { vocabSize: tokenizer.vocabSize, maxSeqLen: config.rollout.contextWindow });
    policy = new PolicyModel({ config: mcfg, optim: optim(config.optim.policyLr), rng: rng.fork() });
  }
  if (policy.config.maxSeqLen < config.rollout.contextWindow) {
    throw new Error(`the model's maxSeqLen (${policy.config.maxSeqLen}) is below rollout.contextWindow (${config.rollout.contextWindow})`);
  }
  const critic = options.needsCritic ? CriticModel.fromPolicy({ policy, optim: optim(config.optim.criticLr) }) : null;
  return {
    policy,
    critic,
    sampler: (r) => (options.actor === 'expert' ? textPolicySampler({ tokenizer, policy: family.expert, rng: r }) : new ModelSampler({ policy, rng: r })),
    save: (dir, meta) => saveCheckpoint(dir, { policy, ...(critic ? { critic } : {}), meta }),
    restore: async (dir) => {
      const loaded = await loadCheckpoint(dir);
      copyNet(policy.net, loaded.policy.net);
      if (critic) {
        if (!loaded.critic) throw new Error(`${dir} has no critic, but this run trains one`);
        copyNet(critic.net, loaded.critic.net);
      }
    },
  };
}
