import { z } from 'zod';
import type { DensePart, TaskFamily } from '../../env/family.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { DEFAULT_OPTIMIZER } from '../../optim/config.ts';
import type { ChatLayout } from '../../rollout/chat-layout.ts';
import { encodeDense } from './dense-encoding.ts';
import { recallForm, recallValueWords } from '../../env/recall-form.ts';
import { isValueWord } from '../../env/value-words.ts';
import { Rng } from '../../util/random.ts';
import { answerLoss, exampleMask, type Example } from './sft-loss.ts';
import type { SftSequence } from './sft-data.ts';

/**
 * Dense warm-up before episode SFT (docs/sft.md, "Dense-lookup warm-up"): sequences from the
 * family's `dense` generator, each with many supervised lookups, loss on the supervised tokens
 * only. Episode SFT alone gives one or two lookups per episode and its base never learned to
 * read a value back (x4 at the `none` level); 3000 warm-up steps made it learn within SFT.
 */
export const DenseWarmupSchema = z
  .object({
    /** Optimizer steps; 0 skips the warm-up (a family without a dense generator runs only recallSteps). */
    steps: z.number().int().nonnegative().default(0),
    /**
     * The first recallSteps of `steps` use the recall form (src/env/recall-form.ts: plain key ->
     * value recall, the same for every family; a family without a dense generator runs only this
     * stage), so a key-matched lookup exists before the harder forms; without it the model settled
     * on copying values by position (docs/sft.md).
     */
    recallSteps: z.number().int().nonnegative().default(0),
    /**
     * If the held-out recall accuracy is below this at the end of the recall stage, the stage goes
     * on in blocks of RECALL_BLOCK steps until it is reached or the stage is recallMaxSteps long
     * (0: never). When recall takes off varies with the initialization: in Qwen3 ids one seed of
     * three was still at 0.05 after 300 steps and reached 0.98 at 450 (docs/sft.md, "Recall in
     * Qwen3 ids"). The extra steps come out of the family forms; the total and the lr schedule stay.
     */
    recallMinAcc: z.number().min(0).max(1).default(0),
    /** Longest recall stage when recallMinAcc extends it (default: 3 x recallSteps). */
    recallMaxSteps: z.number().int().nonnegative().optional(),
    /** Sequences per step. */
    batch: z.number().int().positive().default(16),
    /**
     * Sequences per step in the recall stage (default: batch). Recall sequences are ~20 tokens, so
     * 128 per step cost about what 16 episode-form sequences do; the probe left the plateau
     * reliably only with ~100+ lookups per step (docs/sft.md, "Associative recall probe").
     */
    recallBatch: z.number().int().positive().optional(),
    /** Peak lr (warm-up 20 steps, then cosine to lr * 0.1); 1e-3 learned, >= 2e-3 stalled (docs/sft.md). */
    lr: z.number().positive().default(1e-3),
    /** Stream length: lookup form 1..maxChunks chunks, episode form maxChunks/2..maxChunks. */
    maxChunks: z.number().int().positive().max(12).default(8),
    /** Supervised lookups per sequence, and the share of them written as summaries. */
    probes: z.number().int().positive().max(16).default(8),
    summaryShare: z.number().min(0).max(1).default(0.5),
    /**
     * The share of episode forms that end with the expert's answer, its reasoning included, instead
     * of a summary (kv-ledger). The tools format's presets set it (preset-agent-format.ts): its
     * answer restates each queried key's updates before the call, a lookup across the window's
     * calls and their reasoning that the forms otherwise never teach in that layout.
     */
    answerShare: z.number().min(0).max(1).default(0),
    /** Held-out loss/accuracy every this many steps (128 fixed sequences). */
    evalEvery: z.number().int().positive().default(500),
    /**
     * Dense sequences mixed into every epoch of the episode SFT that follows (families with a
     * dense generator). fog-courier's take decision, learned in the warm-up (probe accuracy 1.0),
     * fell to 0.01 during 20 epochs of episode SFT, where `go` is 82% of the actions; replay kept
     * it at 0.70-0.88 but did not move Pass@1 (docs/sft.md, "Family dense forms"), so the presets leave it at 0.
     */
    replay: z.number().int().nonnegative().default(0),
  })
  .strict();
export type DenseWarmupConfig = z.infer<typeof DenseWarmupSchema>;

export interface WarmupPoint {
  step: number;
  /** Mean training loss since the previous point (null at step 0, before any training). */
  trainLoss: number | null;
  heldOutLoss: number;
  heldOutAcc: number;
  /** Accuracy on the supervised number tokens only (the values: the lookups that matter). */
  heldOutValueAcc: number;
  /** Loss and accuracy on 128 held-out recall-form sequences (only when the recall stage runs). */
  recallLoss?: number;
  recallAcc?: number;
  /** True while the recall stage runs (its accuracy is meaningful only then). */
  recallStage?: boolean;
}

/** Steps by which recallMinAcc extends a recall stage that has not reached it. */
export const RECALL_BLOCK = 50;

/**
 * The recall stage the presets run (docs/sft.md): 300 steps of 128 recall sequences, longer (up to
 * 900) until held-out recall accuracy reaches 0.9.
 */
export const PRESET_RECALL_STAGE = { recallSteps: 300, recallMinAcc: 0.9, recallBatch: 128 } as const;

/**
 * `n` dense sequences (the family's generator, no recall form) as SFT sequences: the supervised
 * positions are the mask, so they train with the episode segments in one loss (dense.replay).
 */
export function denseReplay(options: {
  family: TaskFamily;
  knobs: Record<string, unknown>;
  layout: ChatLayout;
  config: DenseWarmupConfig;
  rng: Rng;
  n: number;
  maxTokens: number;
}): SftSequence[] {
  const generate = familyDense(options.family, options.knobs, options.config);
  if (!generate || options.n === 0) return [];
  return Array.from({ length: options.n }, () => {
    const e = encodeDense(generate(options.rng), options.layout, options.maxTokens, options.family.reasoner);
    return { tokens: e.tokens, mask: exampleMask(e) };
  });
}

/** The family's dense generator with the config's knobs and sizes bound (undefined without one). */
function familyDense(
  family: TaskFamily,
  knobsInput: Record<string, unknown>,
  config: DenseWarmupConfig,
): ((rng: Rng) => DensePart[]) | undefined {
  if (!family.sft?.dense) return undefined;
  const knobs = family.knobs.parse(knobsInput);
  return (rng) =>
    family.sft!.dense!({
      rng,
      knobs,
      maxChunks: config.maxChunks,
      probes: config.probes,
      summaryShare: config.summaryShare,
      answerShare: config.answerShare,
    });
}

/**
 * Most steps the warm-up runs for a family: all of them, or without a dense generator the recall
 * stage alone, which recallMinAcc may extend up to recallMaxSteps (the stage then ends where it
 * reaches the accuracy). Capping it at recallSteps made the extension unreachable there: a
 * repo-repair base left the stage at recall accuracy 0.42 and never learned to copy an expression
 * into its edit command.
 */
export function denseWarmupSteps(family: Pick<TaskFamily, 'sft'>, config: DenseWarmupConfig): number {
  if (family.sft?.dense) return config.steps;
  if (config.steps === 0) return 0;
  return config.recallMinAcc > 0 ? recallStageMax(config) : Math.min(config.steps, config.recallSteps);
}

/** Longest recall stage: recallMaxSteps, else 3 x recallSteps. */
function recallStageMax(config: DenseWarmupConfig): number {
  return Math.max(config.recallSteps, config.recallMaxSteps ?? 3 * config.recallSteps);
}

/**
 * The example, if every supervised id is in the policy's vocabulary. A trimmed vocabulary maps any
 * other id to its unknown slot, whose logit is pinned far below the rest: one such target makes the
 * mean loss about 1e29 and the warm-up learns nothing, so it is a bug in the set's choice
 * (experiments/train/trimmed-vocabulary.ts), said at once.
 */
function covered(e: Example, policy: PolicyModel, layout: ChatLayout): Example {
  const vocab = policy.vocab;
  if (vocab.isIdentity) return e;
  for (const t of e.answerAt)
    if (!vocab.covers(e.tokens[t]!))
      throw new Error(
        `internal: the dense warm-up supervises token id ${e.tokens[t]} (${JSON.stringify(layout.tokenizer.decode([e.tokens[t]!]))}), outside the trimmed vocabulary (experiments/train/trimmed-vocabulary.ts missed it)`,
      );
  return e;
}

/**
 * Trains policy's weights in place with the warm-up's own AdamW schedule (a second optimizer over
 * the same parameter buffer), so the episode SFT that follows starts its own schedule fresh.
 */
export async function runDenseWarmup(options: {
  policy: PolicyModel;
  family: TaskFamily;
  knobs: Record<string, unknown>;
  layout: ChatLayout;
  config: DenseWarmupConfig;
  seed: number;
  /** Longest dense sequence (C of the rollout; default: the model's maxSeqLen). */
  maxTokens?: number;
  onEval?: (p: WarmupPoint) => void;
  /** After each optimizer step (progress between evaluations, which can be many minutes apart). */
  onStep?: (step: number, steps: number) => void;
}): Promise<WarmupPoint[]> {
  const { policy, family, layout, config } = options;
  const steps = denseWarmupSteps(family, config);
  if (steps === 0) return [];
  const dense = familyDense(family, options.knobs, config);
  const valueWords = recallValueWords(family, options.knobs);
  const sample = (rng: Rng, recall = false): Example =>
    covered(
      encodeDense(
        recall || !dense ? recallForm({ rng, probes: config.probes, valueWords }) : dense(rng),
        layout,
        options.maxTokens ?? policy.config.maxSeqLen,
        family.reasoner,
      ),
      policy,
      layout,
    );
  const optim = { ...DEFAULT_OPTIMIZER, lr: config.lr, totalSteps: steps, warmupSteps: Math.min(20, steps) };
  const warm = new PolicyModel({ config: policy.config, optim, params: policy.net.params, vocab: policy.vocab });
  const heldRng = new Rng(999_983); // the same held-out sequences in every run
  const held = Array.from({ length: 128 }, () => sample(heldRng));
  // The same sequences, supervised on value tokens only (numbers, or value words): copy tokens (keys,
  // `set`, `,`) are most of the targets and hid that no value was ever right (docs/sft.md, d7).
  const isValueToken = (t: number) => {
    const w = layout.tokenizer.decode([t]).trim();
    return /^\d+$/.test(w) || isValueWord(w);
  };
  const heldValues = held
    .map((e) => ({ tokens: e.tokens, answerAt: e.answerAt.filter((t) => isValueToken(e.tokens[t]!)) }))
    .filter((e) => e.answerAt.length > 0);
  const heldRecall = config.recallSteps > 0 ? Array.from({ length: 128 }, () => sample(heldRng, true)) : [];
  const evaluate = (): Omit<WarmupPoint, 'step' | 'trainLoss'> => {
    const all = answerLoss({ policy: warm, batch: held, grad: false });
    const valueAcc = heldValues.length ? answerLoss({ policy: warm, batch: heldValues, grad: false }).acc : Number.NaN;
    const r = heldRecall.length ? answerLoss({ policy: warm, batch: heldRecall, grad: false }) : undefined;
    const recallAcc = r ? { recallLoss: r.loss, recallAcc: r.acc } : {};
    return { heldOutLoss: all.loss, heldOutAcc: all.acc, heldOutValueAcc: valueAcc, ...recallAcc };
  };
  const train = new Rng(options.seed * 1000 + 7);
  const curve: WarmupPoint[] = [{ step: 0, trainLoss: null, ...evaluate() }];
  let lossSum = 0;
  let seen = 0;
  const recallMax = Math.min(steps, recallStageMax(config));
  // Without a dense generator the recall stage is the whole warm-up: it ends with the stage.
  const recallOnly = !dense;
  let recallEnd = config.recallSteps;
  for (let step = 1; step <= steps; step++) {
    const recall = step <= recallEnd;
    const n = recall ? (config.recallBatch ?? config.batch) : config.batch;
    lossSum += answerLoss({
      policy: warm,
      batch: Array.from({ length: n }, () => sample(train, recall)),
      grad: true,
    }).loss;
    seen++;
    warm.step();
    options.onStep?.(step, steps);
    // Back to the event loop once a step: a warm-up runs for minutes (hours in the tools format at
    // the presets' sizes), and Ctrl-C / SIGTERM are handled there (cli/exit-on-interrupt.ts);
    // without this a signal waited for the whole warm-up.
    await new Promise<void>((resolve) => setImmediate(resolve));
    // The end of the recall stage is also a point: the recall form's accuracy is only meaningful
    // there (the family forms that follow overwrite it, and the log says so by omitting it).
    if (step % config.evalEvery === 0 || step === steps || step === recallEnd) {
      const point: WarmupPoint = { step, trainLoss: lossSum / seen, ...evaluate() };
      if (recall) point.recallStage = true;
      if (step === recallEnd && (point.recallAcc ?? 1) < config.recallMinAcc && recallEnd < recallMax) {
        recallEnd = Math.min(recallMax, recallEnd + RECALL_BLOCK);
      }
      curve.push(point);
      options.onEval?.(point);
      lossSum = 0;
      seen = 0;
      if (recallOnly && step === recallEnd) break;
    }
  }
  policy.net.markWeightsChanged(); // the shared buffer changed under the SFT model
  return curve;
}
