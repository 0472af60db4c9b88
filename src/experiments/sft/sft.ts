import { existsSync } from 'node:fs';
import { restoreCheckpoint, saveCheckpoint } from '../../model/formats/checkpoint.ts';
import { modelConfig } from '../../model/network/config.ts';
import { loadPolicyDir } from '../../model/formats/load-policy.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { loadTokenizer, type LoadedTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { checkTokenizer } from '../../model/tokenizer/tokenizer-match.ts';
import { DEFAULT_OPTIMIZER, type OptimizerConfig } from '../../optim/config.ts';
import { packByTokens } from '../../rl/minibatches.ts';
import { overFamilySizes, resolveRolloutConfig } from '../../rollout/config.ts';
import { mixSeed, Rng } from '../../util/random.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { latestCheckpoint, saveCheckpointDir } from '../runs/checkpoint-store.ts';
import { denseReplay, denseWarmupSteps, runDenseWarmup } from './dense-warmup.ts';
import { checkExpertFaults, expertEpisodes, type SftSequence, toSequences } from './sft-data.ts';
import { FaultPolicySchema } from '../../rollout/faults.ts';
import type { SftConfig } from './sft-config.ts';
import { heldOutAccuracy } from './sft-heldout.ts';
import { sftEpoch } from './sft-epoch.ts';
import { appendMetrics, truncateMetrics } from '../runs/metrics-log.ts';
import { TensorboardLog, truncateTensorboard } from '../runs/tensorboard-log.ts';
import { episodeMarkdown } from '../runs/tensorboard-text.ts';
import type { ProgressReporter } from '../runs/progress.ts';
import { createRunDir, runPaths } from '../runs/run-dir.ts';
import { getFamily } from '../../env/registry.ts';
import type { TaskFamily } from '../../env/family.ts';
import { chooseVocabulary } from '../train/trimmed-vocabulary.ts';
import type { VocabMap } from '../../model/tokenizer/vocab-map.ts';

/**
 * Runs SFT into runDir (created if new; an existing one is resumed at epoch granularity) and
 * returns the final checkpoint directory, a model checkpoint usable as model.init and --policy.
 */
export async function runSft(options: {
  runDir: string;
  config: SftConfig;
  /** A pipeline directory the run belongs to (its provenance names paths relative to it). */
  root?: string;
  progress?: ProgressReporter;
  log?: (line: string) => void;
  /** The task family (default: the registered config.env.name; a test wraps it to inject faults). */
  family?: TaskFamily;
}): Promise<{ checkpoint: string }> {
  const { config } = options;
  const paths = runPaths(options.runDir);
  const done = latestCheckpoint(paths.root);
  if (done && done.iteration >= config.epochs) return { checkpoint: done.dir }; // finished earlier: nothing to redo
  const tokenizer = loadTokenizer(config.tokenizer);
  const family = options.family ?? getFamily(config.env.name);
  // The family's sizes under the config's, as crl train resolves them: a base SFT made trains as is.
  const { config: rollout, layout } = resolveRolloutConfig({
    input: overFamilySizes(family.rollout, config.rollout),
    tokenizer,
    tools: family.tools ?? null,
  });
  const rng = new Rng(mixSeed(config.seed, 0x5f7));
  const mix = config.mix[config.env.name] ?? [];
  const vocab = await chooseVocabulary({
    tokenizer,
    layout,
    rollout,
    family,
    knobs: config.env.knobs,
    extraKnobs: mix.map((m) => m.knobs),
  });
  const faults = FaultPolicySchema.parse(config.faults ?? {});
  const common = {
    family,
    retries: faults.retries,
    knobs: config.env.knobs,
    mix,
    rollout,
    layout,
    tokenizer,
    lossyP: config.lossyP,
    lossyGoalP: config.lossyGoalP,
    slipP: config.slipP,
    episodes: config.episodes,
    seeds: family.trainSeeds,
  };
  // Each epoch's data depends on (seed, epoch) only, so a resumed run sees the same episodes.
  const epochData = async (epoch: number) => {
    const dataEpoch = config.data === 'fresh' ? epoch : 1;
    const expert = await expertEpisodes({
      ...common,
      rng: new Rng(mixSeed(config.seed, dataEpoch, 0xda7a)),
      idPrefix: `sft-e${epoch}`,
    });
    checkExpertFaults({ expert, label: `SFT epoch ${epoch}`, faults, log: options.log });
    const records = expert.episodes;
    const replay = denseReplay({
      family,
      knobs: config.env.knobs,
      layout,
      config: config.dense,
      n: config.dense.replay,
      maxTokens: rollout.contextWindow,
      rng: new Rng(mixSeed(config.seed, dataEpoch, 0xd5e)),
    });
    const sequences = [...toSequences({ records }), ...replay];
    checkCovered(sequences, vocab);
    return { records, sequences, leftOut: expert.leftOut.length, retried: expert.retried.length };
  };
  const heldOutSet = async () => {
    const expert = await expertEpisodes({
      ...common,
      mix: [],
      slipP: 0, // accuracy against the right answers, not the demonstrator's slips
      episodes: config.heldOutEpisodes,
      seeds: family.evalSeeds,
      rng: new Rng(mixSeed(config.seed, 0x4e1d)),
      idPrefix: 'sft-heldout',
    });
    checkExpertFaults({ expert, label: 'SFT held-out set', faults, log: options.log });
    return toSequences({ layout, records: expert.episodes });
  };
  const heldOut = config.heldOutEpisodes > 0 ? await heldOutSet() : [];

  // Steps per epoch are estimated from epoch 1 (fresh epochs differ by a few percent; the cosine
  // stays flat at its floor if the estimate runs short).
  let current = await epochData(1);
  // Counted by packing, not tokens / batchTokens: whole segments leave part of each budget unused.
  const stepsPerEpoch = packByTokens({
    lengths: current.sequences.map((s) => s.tokens.length),
    tokenBudget: config.batchTokens,
  }).length;
  const steps = config.epochs * Math.max(1, stepsPerEpoch);
  const cfg = modelConfig(config.model.preset, {
    vocabSize: vocab.size,
    maxSeqLen: Math.max(rollout.contextWindow, config.model.maxSeqLen ?? 0),
  });
  const optim = {
    ...DEFAULT_OPTIMIZER,
    lr: config.lr,
    totalSteps: steps,
    warmupSteps: Math.min(config.warmupSteps, steps),
    minLrRatio: config.minLrRatio,
  };
  const policy = config.model.init
    ? await initPolicy({
        dir: config.model.init,
        optim,
        tokenizer,
        contextWindow: rollout.contextWindow,
      })
    : new PolicyModel({ config: cfg, optim, rng: rng.fork(), vocab });
  // The run directory appears only now, once the config resolved and the inputs loaded (task
  // family, knobs, expert episodes, model preset): a failed start leaves nothing behind.
  if (!existsSync(paths.config)) createRunDir({ dir: paths.root, system: 'base', config, root: options.root });
  let ckpt = latestCheckpoint(paths.root);
  const denseSteps = denseWarmupSteps(family, config.dense);
  if (!ckpt && denseSteps > 0) {
    // The warm-up's result is saved as iteration 0 (fresh optimizer state): a crash during the
    // episode SFT resumes after it; a crash during the warm-up redoes it (minutes, deterministic).
    const t0 = Date.now();
    let said = t0;
    const curve = await runDenseWarmup({
      policy,
      family,
      knobs: config.env.knobs,
      layout,
      config: config.dense,
      seed: config.seed,
      maxTokens: rollout.contextWindow,
      // A line a minute between the evaluations' lines, so a long warm-up shows it is moving.
      onStep: (step, steps) => {
        if (Date.now() - said < 60_000) return;
        said = Date.now();
        options.log?.(`dense warm-up step ${step}/${steps} (${((said - t0) / 1000).toFixed(0)} s)`);
      },
      onEval: (p) =>
        options.log?.(
          `dense warm-up ${p.step}/${denseSteps}: train loss ${p.trainLoss?.toFixed(3) ?? '-'}, held-out loss ${p.heldOutLoss.toFixed(3)}, acc ${p.heldOutAcc.toFixed(3)}, value acc ${p.heldOutValueAcc.toFixed(3)}${p.recallAcc === undefined || !p.recallStage ? '' : `, recall acc ${p.recallAcc.toFixed(3)}`} (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
        ),
    });
    writeFileAtomic(
      `${paths.root}/dense-warmup.json`,
      JSON.stringify({ config: config.dense, seconds: (Date.now() - t0) / 1000, curve }),
    );
    await saveCheckpointDir({
      runDir: paths.root,
      iteration: 0,
      write: (dir) => saveCheckpoint(dir, { policy, meta: { sftEpoch: 0, denseWarmupSteps: denseSteps } }),
    });
    ckpt = latestCheckpoint(paths.root);
  }
  let start = 0;
  if (ckpt) {
    await restoreCheckpoint(ckpt.dir, { policy });
    start = ckpt.iteration;
  }
  truncateMetrics({ path: paths.metrics, lastIteration: start });
  truncateTensorboard({ dir: paths.root, lastIteration: start });
  // The same event files as crl train's (docs/tensorboard.md), step = the epoch.
  const tensorboard = config.tensorboard === false ? null : new TensorboardLog(paths.root);
  options.progress?.start({ total: config.epochs, first: start + 1 });
  let expertSuccess = 0;
  let episodes = 0;
  let leftOut = 0;
  let retried = 0;
  for (let epoch = start + 1; epoch <= config.epochs; epoch++) {
    const t0 = performance.now();
    if (epoch !== 1 && config.data === 'fresh') current = await epochData(epoch);
    const successes = current.records.filter((r) => r.reward >= 1).length;
    expertSuccess += successes;
    episodes += current.records.length;
    leftOut += current.leftOut;
    retried += current.retried;
    const metrics: Record<string, number> = {
      ...sftEpoch({
        policy,
        segments: current.sequences,
        batchTokens: config.batchTokens,
        rng: new Rng(mixSeed(config.seed, epoch)),
      }),
      // What the epoch trained on: a base that learned little from few or failing demonstrations
      // shows it here before any evaluation.
      'sft/expert_episodes': current.records.length,
      'sft/expert_success': current.records.length ? successes / current.records.length : Number.NaN,
      'sft/fault_left_out': current.leftOut,
      'sft/fault_retried': current.retried,
    };
    if (Number.isNaN(metrics['sft/loss']))
      throw new Error(`SFT epoch ${epoch}: no supervised token in ${current.sequences.length} sequences (internal)`);
    // Held-out accuracy costs a forward pass over heldOutEpisodes: at the end and every 5 epochs.
    if (heldOut.length > 0 && (epoch === config.epochs || epoch % 5 === 0))
      Object.assign(metrics, heldOutAccuracy({ policy, sequences: heldOut, batchTokens: config.batchTokens }));
    appendMetrics({ path: paths.metrics, iteration: epoch, metrics });
    // Before the checkpoint, as crl train writes them: a resume cuts back to it (truncateTensorboard).
    tensorboard?.appendIteration({
      iteration: epoch,
      metrics,
      timing: { 'perf/epoch_s': (performance.now() - t0) / 1000 },
      texts: current.records.slice(0, 1).map((r) => ({ tag: 'samples/episode_0', text: episodeMarkdown(r, layout) })),
    });
    await saveCheckpointDir({
      runDir: paths.root,
      iteration: epoch,
      write: (dir) => saveCheckpoint(dir, { policy, meta: { sftEpoch: epoch } }),
    });
    options.progress?.update({ iteration: epoch, metrics });
  }
  options.progress?.stop();
  writeFileAtomic(
    `${paths.root}/sft-data.json`,
    JSON.stringify({
      data: config.data,
      episodesSeen: episodes,
      expertSuccess: episodes ? expertSuccess / episodes : null,
      faultsLeftOut: leftOut,
      faultsRetried: retried,
      optimizerSteps: steps,
    }),
  );
  return { checkpoint: latestCheckpoint(paths.root)!.dir };
}

/** Expert text must stay inside the model's vocabulary: a supervised unknown id is a bug in the set's choice. */
function checkCovered(sequences: readonly SftSequence[], vocab: VocabMap): void {
  if (vocab.isIdentity) return;
  for (const s of sequences)
    for (let t = 0; t < s.tokens.length; t++)
      if (s.mask[t] === 1 && !vocab.covers(s.tokens[t]!))
        throw new Error(
          `internal: supervised token id ${s.tokens[t]} is outside the trimmed vocabulary (experiments/train/trimmed-vocabulary.ts missed it)`,
        );
}

/** The policy `model.init` names, with this run's optimizer; it must cover the vocabulary and C. */
async function initPolicy(options: {
  dir: string;
  optim: OptimizerConfig;
  tokenizer: LoadedTokenizer;
  contextWindow: number;
}): Promise<PolicyModel> {
  const { policy } = await loadPolicyDir(options.dir);
  const c = policy.config;
  // The weights speak one tokenizer's ids (a Hugging Face directory: its own tokenizer.json).
  checkTokenizer({ what: `model.init ${options.dir}`, ref: policy.vocab.tokenizer, tokenizer: options.tokenizer });
  const vocabSize = options.tokenizer.tokenizer.vocabSize;
  if (policy.vocab.isIdentity && c.vocabSize < vocabSize)
    throw new Error(`model.init ${options.dir}: its vocabulary has ${c.vocabSize} tokens, the tokenizer ${vocabSize}`);
  if (c.maxSeqLen < options.contextWindow)
    throw new Error(
      `model.init ${options.dir}: its maxSeqLen ${c.maxSeqLen} is below the context window ${options.contextWindow}`,
    );
  return new PolicyModel({ config: c, optim: options.optim, params: policy.net.params, vocab: policy.vocab });
}
