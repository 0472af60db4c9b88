/**
 * compaction-rl public API: an explicit list, grouped by layer. Each area owns its block.
 */

// --- util ---
export { Rng, mixSeed } from './util/random.ts';

// --- tensor ---
export { gemm, gemmBackend, startGemmProfile, stopGemmProfile } from './tensor/gemm.ts';
export type { GemmArgs, GemmShapeStats } from './tensor/gemm.ts';
export { nativeStatus } from './tensor/native.ts';
export type { NativeStatus } from './tensor/native.ts';

// --- model ---
export { WordTokenizer, UnknownWordError } from './model/tokenizer/tokenizer.ts';
export { VOCAB } from './words/vocab.ts';
export { modelConfig, modelPresetNames, parseModelConfig, ModelConfigSchema } from './model/network/config.ts';
export type { ModelConfig, ModelPresetName } from './model/network/config.ts';
export { PolicyModel } from './model/network/policy.ts';
export { CriticModel } from './model/network/critic.ts';
export { ModelSampler } from './model/sampler/sampler.ts';
export {
  HALF_PRECISION_MIN_PARAMS,
  resolvePrecision,
  type PrecisionChoice,
  type WeightPrecision,
} from './model/network/weight-precision.ts';
export { SequenceTooLongError } from './model/network/pack.ts';
export { saveCheckpoint, loadCheckpoint } from './model/formats/checkpoint.ts';
export { CheckpointFormatError } from './model/formats/safetensors.ts';
export { toHfConfig, fromHfConfig } from './model/formats/hf-config.ts';
export { Profiler } from './model/network/profiler.ts';
// optimizer (src/optim, owned by the model area)
export { AdamW } from './optim/adamw.ts';
export { OptimizerConfigSchema, DEFAULT_OPTIMIZER, parseOptimizerConfig } from './optim/config.ts';
export type { OptimizerConfig } from './optim/config.ts';
export { learningRate } from './optim/schedule.ts';
export { clipGradNorm, gradNorm } from './optim/clip.ts';

// --- rl ---
export type { TrainablePolicy, TrainableCritic, PolicyForward } from './contracts/index.ts';
export { computeSegmentAdvantages, segmentLambda, localGae, generatedPositions } from './rl/segment-advantages.ts';
export type {
  SegmentAdvantageInput,
  SegmentAdvantageOptions,
  SegmentAdvantageOutput,
  LambdaSpec,
} from './rl/segment-advantages.ts';
export { aggregateLoss, aggregationWeights, LOSS_AGGREGATIONS } from './rl/aggregate-loss.ts';
export type { LossAggregation } from './rl/aggregate-loss.ts';
export { maskedWhiten } from './rl/whiten.ts';
export { whitenAdvantages, whiteningMode, WHITENING_MODES } from './rl/whitening.ts';
export type { WhiteningMode, WhitenSegment } from './rl/whitening.ts';
export { fullTrajectoryAdvantages, generationChain, chainGae } from './rl/full-trajectory-gae.ts';
export type { ChainSegment, GenerationChain, FullTrajectoryOptions } from './rl/full-trajectory-gae.ts';
export { segmentRewards, SEGMENT_REWARD_MODES, DEFAULT_SEGMENT_DISCOUNT } from './rl/segment-rewards.ts';
export type { SegmentRewardMode } from './rl/segment-rewards.ts';
export { segmentLossWeights, SEGMENT_WEIGHTINGS } from './rl/segment-weights.ts';
export type { SegmentWeighting } from './rl/segment-weights.ts';
export { policyAdvantages } from './rl/policy-advantages.ts';
export type { CreditSegment } from './rl/policy-advantages.ts';
export { policyLoss, surrogateToken } from './rl/policy-loss.ts';
export type { PolicyLossOptions, PolicyLossTerms } from './rl/policy-loss.ts';
export { valueLoss, valueLossToken } from './rl/value-loss.ts';
export type { ValueLossOptions, ValueLossTerms } from './rl/value-loss.ts';
export {
  estimateAdvantages,
  getAdvantageEstimator,
  advantageEstimatorNames,
  groupNormalizedRewards,
  compactionGaeConfigSchema,
  broadcastConfigSchema,
  fullTrajectoryGaeConfigSchema,
} from './rl/advantage-estimators.ts';
export type {
  AdvantageEstimator,
  AdvantageEstimatorName,
  EpisodeAdvantageInput,
  EstimatorSegment,
  EstimatorOutput,
} from './rl/advantage-estimators.ts';
export { packByTokens, buildMinibatches } from './rl/minibatches.ts';
export { ppoConfigSchema, parsePpoConfig } from './rl/ppo-config.ts';
export type { PpoConfig, PpoConfigInput } from './rl/ppo-config.ts';
export { ppoUpdate, policyMask } from './rl/ppo-update.ts';
export type { PpoSegment, PpoMetrics } from './rl/ppo-update.ts';
export { recomputeOld } from './rl/recompute-old.ts';
export type { RecomputeSegment, RecomputeResult } from './rl/recompute-old.ts';
export { RlInputError } from './rl/errors.ts';

// --- rollout ---
export type {
  Environment,
  EnvCallOptions,
  EnvReset,
  EnvStep,
  Tokenizer,
  TokenSampler,
  SampleRequest,
  SampleResult,
  SamplingParams,
  ChatMessage,
  RandomSource,
  TextPolicy,
} from './contracts/index.ts';
export {
  createChatLayout,
  DEFAULT_CHAT_TEMPLATES,
  encodeTaskTurn,
  encodeObservationTurn,
  encodeResumeTurn,
} from './rollout/chat-layout.ts';
export type { ChatLayout, ChatTemplates } from './rollout/chat-layout.ts';
export { parseChat } from './rollout/parse-chat.ts';
export {
  RolloutConfigSchema,
  resolveRolloutConfig,
  budgetTerms,
  budgetProblems,
  RolloutConfigError,
} from './rollout/config.ts';
export type { RolloutConfig, RolloutConfigInput, BudgetTerms } from './rollout/config.ts';
export { runEpisodes } from './rollout/runner.ts';
export type { RunEpisodesOptions } from './rollout/runner.ts';
export { EpisodeRun } from './rollout/episode.ts';
export { InstructionTooLongError } from './rollout/episode-errors.ts';
export type { EpisodeSpec, EpisodePhase } from './rollout/episode.ts';
export {
  EpisodeRecordSchema,
  SegmentSchema,
  EpisodeEventSchema,
  OUTCOMES,
  isSuccess,
  segmentArrays,
  recordsToJsonl,
  parseRecordsJsonl,
  RecordParseError,
} from './rollout/record.ts';
export type {
  EpisodeRecord,
  Segment,
  EpisodeEvent,
  CompactionEvent,
  EnvErrorEvent,
  Outcome,
} from './rollout/record.ts';
export { callEnv, EnvCallError } from './rollout/env-call.ts';
export { RecordWriter, readRecordsFile } from './rollout/record-file.ts';
export { renderEpisode } from './rollout/render.ts';
export { textPolicySampler } from './rollout/text-policy-sampler.ts';

// --- env ---
export type { TaskFamily, SeedRange } from './env/family.ts';
export type { SummaryContent, SummaryWriters } from './env/summary-content.ts';
export { registerFamily, getFamily, familyNames } from './env/registry.ts';
export { BUILTIN_FAMILIES, TERMINAL_FAMILIES, KNOWN_FAMILIES } from './env/builtin.ts';
export {
  kvLedger,
  KvLedgerEnv,
  kvLedgerKnobs,
  kvLedgerVariants,
  generateKvLedger,
  verifyKvLedger,
} from './env/kv-ledger/index.ts';
export type { KvLedgerKnobs, KvLedgerTask } from './env/kv-ledger/index.ts';
export {
  fogCourier,
  FogCourierEnv,
  fogCourierKnobs,
  fogCourierVariants,
  generateFogCourier,
  verifyFogCourier,
} from './env/fog-courier/index.ts';
export type { FogCourierKnobs, FogCourierTask } from './env/fog-courier/index.ts';
export {
  hopSearch,
  HopSearchEnv,
  hopSearchKnobs,
  hopSearchVariants,
  generateHopSearch,
  verifyHopSearch,
} from './env/hop-search/index.ts';
export type { HopSearchKnobs, HopSearchTask } from './env/hop-search/index.ts';
export { readWindow, words } from './env/visible-window.ts';
export type { VisibleWindow, VisibleStep } from './env/visible-window.ts';
export { makeSummaryWriters, renderSummary, dropClauses, SUMMARY_TOKEN_LIMIT } from './env/summary-writers.ts';
export { DenseChat } from './env/dense-chat.ts';

// --- eval ---
export { passAt1, wilsonInterval } from './eval/pass-at-1.ts';
export type { PassAt1 } from './eval/pass-at-1.ts';
export { evaluate, evaluateMode } from './eval/evaluate.ts';
export type { EpisodeBatchRunner, EpisodeOutcome, EpisodeRequest } from './eval/evaluate.ts';
export { EvalResultSchema, ModeResultSchema, readEvalResult } from './eval/eval-result.ts';
export type { EvalResult, ModeResult } from './eval/eval-result.ts';
export { parseSummaryWriter, formatSummaryWriter } from './eval/summary-writer.ts';
export type { SummaryWriterSpec } from './eval/summary-writer.ts';

// --- experiments ---
export { TrainConfigSchema, ALGORITHMS } from './config/train-config.ts';
export type { TrainConfig, TrainConfigInput, Algorithm } from './config/train-config.ts';
export { loadTrainConfig, parseTrainConfig } from './config/load-config.ts';
export { ConfigError, formatConfigIssues } from './config/config-error.ts';
export { train } from './experiments/train/train-loop.ts';
export { runIteration, iterationRngs } from './experiments/train/run-iteration.ts';
export { defaultStages, aroundStages, STAGE_NAMES } from './experiments/train/training-stages.ts';
export type { TrainingStages, TrainingRun, StageName } from './experiments/train/training-stages.ts';
export { runSft } from './experiments/sft/sft.ts';
export { SftConfigSchema } from './experiments/sft/sft-config.ts';
export type { SftConfig } from './experiments/sft/sft-config.ts';
export { reproduce } from './experiments/reproduce/reproduce.ts';
export type { ReproduceSummary } from './experiments/reproduce/reproduce.ts';
export { getPreset, presetNames } from './experiments/reproduce/presets.ts';
export type { Preset, EvalPlan } from './experiments/reproduce/preset-types.ts';
export { SYSTEM_NAMES, systemOverrides } from './experiments/reproduce/systems.ts';
export type { SystemName } from './experiments/reproduce/systems.ts';
export { evaluatePolicy } from './experiments/evaluate/evaluate-policy.ts';
export type { EvalRequest } from './experiments/evaluate/evaluate-policy.ts';
export { writeReport } from './report/write-report.ts';
export { buildTables } from './report/tables.ts';

// --- adapters (remote engines) ---
export { createHttpSampler, EngineError } from './adapters/http-sampler.ts';
export type { HttpSamplerOptions } from './adapters/http-sampler.ts';
export { ENGINE_PROTOCOLS, engineProtocol } from './adapters/engine-protocols.ts';
export type { EngineProtocol, EngineProtocolName } from './adapters/engine-protocols.ts';
export {
  getWeightVersion,
  updateWeightsFromDisk,
  UPDATE_WEIGHTS_PATH,
  WEIGHT_VERSION_PATH,
} from './adapters/engine-weights.ts';
export { EnginePool } from './adapters/engine-pool.ts';
export type { EnginePoolOptions, ReplicaHealth } from './adapters/engine-pool.ts';

// --- the rollout queue (Redis, BullMQ; docs/distributed.md) ---
export { EpisodeMessageSchema, episodeJobId } from './queue/episode-message.ts';
export type { EpisodeMessage, EpisodeMessageInput } from './queue/episode-message.ts';
export { EpisodeQueue } from './queue/episode-queue.ts';
export type { BatchOutcome, BatchProgress } from './queue/episode-queue.ts';
export { JobRejected, startQueueWorker } from './queue/queue-worker.ts';
export { JobRefused } from './queue/job-refusal.ts';
export { QUEUE_SECRET_ENV, queueSecretFromEnv } from './queue/job-signature.ts';
export type { QueueWorkerOptions } from './queue/queue-worker.ts';
export { QueueError } from './queue/redis-connection.ts';
export { RolloutWorker } from './experiments/rollout-queue/rollout-worker.ts';
export { queueSampling, FAILED_EPISODES_FILE } from './experiments/rollout-queue/queue-sampling.ts';
export { withStepDelay } from './env/step-delay.ts';

// --- serve (the embedded engine server, src/serve/) ---
export { startSamplerServer } from './serve/sampler-server.ts';
export type { SamplerServer, SamplerServerOptions, ServerLimits } from './serve/sampler-server.ts';
export { serveCheckpoint } from './serve/serve-checkpoint.ts';
export type { ServeCheckpointOptions, ServedCheckpoint, ServeReady } from './serve/serve-checkpoint.ts';
export { ServeError } from './serve/serve-error.ts';
