import type { TaskFamily } from '../../env/family.ts';
import { restoreCheckpoint, saveCheckpoint } from '../../model/formats/checkpoint.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { checkTokenizer, tokenizerForCheckpoint } from '../../model/tokenizer/tokenizer-match.ts';
import type { ChatLayout } from '../../rollout/chat-layout.ts';
import type { RolloutConfig } from '../../rollout/config.ts';
import { chooseVocabulary } from './trimmed-vocabulary.ts';
import { CriticModel } from '../../model/network/critic.ts';
import { trainingMemoryProblem } from '../../model/network/memory-plan.ts';
import { modelConfig } from '../../model/network/config.ts';
import { loadPolicyDir, readPolicyTokenizer } from '../../model/formats/load-policy.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { ModelSampler } from '../../model/sampler/sampler.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { loraMemory, resolveLora } from '../../model/lora/lora-config.ts';
import { loraPolicy, loraStorage } from './lora-trainer-models.ts';
import type { LoraAdapter } from '../../model/lora/lora-adapter.ts';
import { enginePublisher } from './engine-push.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import type { LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import type { TokenSampler, TrainableCritic, TrainablePolicy } from '../../contracts/index.ts';
import { EnginePool } from '../../adapters/engine-pool.ts';
import type { Rng } from '../../util/random.ts';
import { ConfigError } from '../../config/config-error.ts';
import { engineUrls } from '../../config/execution-config.ts';
import type { TrainConfig } from '../../config/train-config.ts';

/**
 * What the training loop holds: the policy and critic models, a sampler that follows the policy's
 * live weights (method §6 "publish new weights": the ModelSampler reads the same buffer), and
 * checkpoint save/restore in the model's format (weights + AdamW moments, exact).
 */
export interface TrainerModels {
  policy: PolicyModel;
  critic: CriticModel | null;
  sampler(rng: Rng): TokenSampler;
  /**
   * Makes the sampler act with the policy's current weights, the weights after `version` updates
   * (every engine replica loads them, labelled with the version; in-process: nothing to do).
   */
  publish(version: number): Promise<void>;
  /** The remote engine replicas (config.engine), null when the policy samples in this process. */
  engines: EnginePool | null;
  save(dir: string, meta: unknown): Promise<void>;
  restore(dir: string): Promise<void>;
  /**
   * The policy's LoRA adapters (config.model.lora, lora-trainer-models.ts), whose A and B the update
   * steps; the policy's network holds the merged weights. Absent: every weight trains.
   */
  lora?: LoraAdapter;
  /**
   * Where the update runs when it is not `policy` / `critic` themselves (config.trainer: a
   * PyTorch process, torch-trainer-models.ts); absent: in this process.
   */
  trainable?: RemoteTrainable;
}

/** An update that runs elsewhere; `policy` / `critic` above then mirror its weights for sampling. */
export interface RemoteTrainable {
  policy: TrainablePolicy;
  critic: TrainableCritic | null;
  /** After an iteration's update: the sampler's policy takes the new weights. */
  afterUpdate(): void;
  /** Seconds spent in the trainer's handlers and on the wire since the last call (metrics); absent: in this process. */
  takeTiming?(): { computeS: number; wireS: number };
  close(): Promise<void>;
}

/**
 * The tokenizer a training run uses: config.tokenizer (checked against model.init's), else
 * model.init's own, else the one the family's text needs (shell work: qwen3), else word.
 */
export async function trainTokenizer(config: TrainConfig, familyTokenizer?: string): Promise<LoadedTokenizer> {
  const init = config.model.init;
  if (!init) return loadTokenizer(config.tokenizer ?? familyTokenizer ?? 'word');
  const ref = await readPolicyTokenizer(init);
  return tokenizerForCheckpoint({ what: `model.init ${init}`, ref, given: config.tokenizer });
}

/** The AdamW config of a model the run trains at learning rate `lr`. */
export function trainOptimizer(config: TrainConfig, lr: number): OptimizerConfig {
  return {
    ...DEFAULT_OPTIMIZER,
    lr,
    gradClip: config.optim.gradClip,
    weightDecay: config.optim.weightDecay,
    warmupSteps: config.optim.warmupSteps,
    // Upper bound on optimizer steps; the cosine then decays over the run, not past it.
    totalSteps: Math.max(1, config.iterations * config.ppo.epochs * config.ppo.criticUpdatesPerPolicyUpdate * 4),
  };
}

/**
 * Which sampler acts during training: the policy itself (real training), or the family's scripted
 * expert ('expert': plumbing smoke tests only; the policy then learns nothing useful).
 */
export type ActorKind = 'policy' | 'expert';

/**
 * Builds policy and critic: from the config's model preset (vocabulary and sequence length fitted
 * to the tokenizer and C), or from model.init (the SFT base) with fresh optimizer state. The
 * critic starts as a copy of the policy trunk (method §6), or of its first model.criticLayers layers.
 */
export async function buildTrainerModels(options: {
  config: TrainConfig;
  tokenizer: LoadedTokenizer;
  family: TaskFamily;
  needsCritic: boolean;
  actor: ActorKind;
  /** The resolved rollout config and layout (C bounds maxSeqLen; a fresh model's vocabulary is chosen with them). */
  rollout: RolloutConfig;
  layout: ChatLayout;
  rng: Rng;
  /** Where the policy is written for a remote engine to load (config.engine). */
  engineWeightsDir?: string;
  /** Where a LoRA run writes the adapters it pushes to engines that load adapters (engine-push.ts). */
  engineAdaptersDir?: string;
  /** The engine's admin token for its weight endpoint (never stored in the config). */
  engineToken?: string;
  /** Where the engine pool reports a replica going down or coming back. */
  log?: (line: string) => void;
}): Promise<TrainerModels> {
  const { config, tokenizer, family, rng } = options;
  const optim = (lr: number) => trainOptimizer(config, lr);
  let policy: PolicyModel;
  if (config.model.init) {
    const init = await loadPolicyDir(config.model.init);
    checkTokenizer({ what: `model.init ${config.model.init}`, ref: init.policy.vocab.tokenizer, tokenizer });
    policy = new PolicyModel({
      config: init.policy.config,
      optim: optim(config.optim.policyLr),
      params: init.policy.net.params,
      vocab: init.policy.vocab,
    });
  } else {
    const vocab = await chooseVocabulary({
      tokenizer,
      layout: options.layout,
      rollout: options.rollout,
      family,
      knobs: config.env.knobs,
    });
    const mcfg = modelConfig(config.model.preset, {
      vocabSize: vocab.size,
      maxSeqLen: options.rollout.contextWindow,
    });
    policy = new PolicyModel({ config: mcfg, optim: optim(config.optim.policyLr), rng: rng.fork(), vocab });
  }
  if (policy.config.maxSeqLen < options.rollout.contextWindow) {
    throw new ConfigError([
      `rollout.contextWindow: ${options.rollout.contextWindow} is above the model's maxSeqLen (${policy.config.maxSeqLen}); lower it (--context) or use a model with a longer maxSeqLen`,
    ]);
  }
  // The trainer's log-probs are those of the distribution the rollouts sample from (method §6).
  policy.sampling = { temperature: options.rollout.temperature, topP: options.rollout.topP };
  const criticLayers = config.model.criticLayers;
  if (config.model.criticEmbedding === 'frozen' && config.trainer)
    throw new ConfigError([
      '--critic-embedding frozen: the PyTorch trainer trains the whole critic; leave it out with --trainer torch',
    ]);
  if (criticLayers !== undefined && criticLayers > policy.config.nLayers)
    throw new ConfigError([
      `model.criticLayers: ${criticLayers} is more than the policy's ${policy.config.nLayers} layers (--critic-layers takes 1 to ${policy.config.nLayers})`,
    ]);
  const memory = trainingMemoryProblem({
    policy: policy.config,
    criticLayers: options.needsCritic ? (criticLayers ?? policy.config.nLayers) : null,
    minibatchTokens: config.ppo.minibatchTokens,
    // An execution segment and its summary segment run as one sequence (ppo.mergePrefixes): up to 2C.
    seqLen: Math.min(policy.config.maxSeqLen, 2 * options.rollout.contextWindow),
    recompute: config.model.recompute ?? false,
    lora: config.model.lora ? loraMemory(policy, resolveLora(config.model.lora), loraStorage(config)) : undefined,
    criticEmbedding: config.model.criticEmbedding,
  });
  if (memory) throw new ConfigError([memory]);
  const lora = await loraPolicy({ config, policy, optim: optim(config.optim.policyLr) });
  const critic = options.needsCritic
    ? CriticModel.fromPolicy({
        policy,
        optim: optim(config.optim.criticLr),
        layers: criticLayers,
        embedding: config.model.criticEmbedding ?? 'trained',
      })
    : null;
  if (config.model.recompute) {
    policy.net.recompute = true;
    if (critic) critic.net.recompute = true;
  }
  const engine = config.engine;
  if (engine && options.actor === 'expert')
    throw new ConfigError([
      'engine: a remote engine samples the policy; it cannot be combined with the scripted-expert actor (--actor expert)',
    ]);
  if (engine && !options.engineWeightsDir) throw new Error('engine: needs a directory to write the weights to');
  const engines = engine
    ? new EnginePool({
        urls: engineUrls(engine.url),
        protocol: engine.protocol,
        ...(engine.acceptUnversioned ? { acceptUnversioned: true } : {}),
        ...(options.log ? { log: options.log } : {}),
      })
    : null;
  const publish = engines
    ? enginePublisher({
        engines,
        policy,
        lora,
        // Rollout workers name weights by version only, never an adapter: merged weights for them.
        mode: config.queue ? 'off' : (engine!.lora ?? 'auto'),
        weightsDir: options.engineWeightsDir!,
        adaptersDir: options.engineAdaptersDir ?? `${options.engineWeightsDir!}-adapters`,
        ...(options.engineToken ? { token: options.engineToken } : {}),
        ...(options.log ? { log: options.log } : {}),
      })
    : null;
  return {
    policy,
    critic,
    engines,
    sampler: (r) =>
      // A remote engine gets a seed per episode request, as the embedded sampler's streams do.
      engines?.sampler({ seed: r.nextUint32() }) ??
      (options.actor === 'expert'
        ? textPolicySampler({
            tokenizer,
            policy: family.expert,
            rng: r,
            agent: options.layout.agent,
            reasoner: family.reasoner,
          })
        : new ModelSampler({ policy, rng: r })),
    // In process the ModelSampler reads the live parameter buffer: nothing to publish.
    publish: async (version) => publish?.(version),
    save: (dir, meta) =>
      saveCheckpoint(dir, { policy, ...(critic ? { critic } : {}), meta, ...(lora ? { adapter: lora.adapter } : {}) }),
    restore: async (dir) => {
      await restoreCheckpoint(dir, { policy, critic, ...(lora ? { adapter: lora.adapter.kind } : {}) });
      lora?.restore(dir);
    },
    // LoRA: the update steps the adapters (in this process, unless withTorchTrainer moves it; the critic as without).
    ...(lora
      ? { lora: lora.lora, trainable: { policy: lora.trainable, critic, afterUpdate: () => {}, close: async () => {} } }
      : {}),
  };
}
