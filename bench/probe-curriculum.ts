/**
 * Dense-lookup warm-up probe (docs/sft.md, "Dense-lookup warm-up probe"). Question: does
 * pretraining the policy on kv-ledger-format streams with MANY answer positions per sequence,
 *   <bos> chunk 1 : set e 43 , del h , filler 17 , set h 12 , set e 14 end , query e answer 14 , query h answer none ...
 * (loss on the answer values only; every word is in src/words/vocab.ts) make the episode-SFT base
 * answer kv-ledger queries? bench/probe-recall.ts found recall learned only with ~128 lookups per
 * optimizer step (best at 2 layers); episode SFT gives about one answer per episode.
 *
 * Steps: (1) a fresh PolicyModel as sft.ts builds it (same preset, vocab, maxSeqLen = C),
 * (2) --warm-steps of the dense warm-up, (3) the warmed weights saved as iteration 0 of an SFT run
 * dir (saveCheckpoint, optimizer moments and step zeroed so SFT's own warm-up + cosine start
 * fresh), then runSft resumes from it — sft.ts has no init flag, and resuming from iteration 0 is
 * its documented resume path, so the episode SFT is exactly `crl sft`'s. (4) Evaluate with
 * `bin/crl eval --policy <out> ...` (printed at the end).
 *
 *   CRL_THREADS=1 node --import tsx bench/probe-curriculum.ts --out runs/cur --warm-steps 600
 *
 * The last line is one JSON object: args, warm-up curve, final SFT metrics, checkpoint path.
 */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { generateKvLedger, opText } from '../src/env/kv-ledger/generate.ts';
import { kvLedgerKnobs } from '../src/env/kv-ledger/knobs.ts';
import { saveCheckpoint } from '../src/model/formats/checkpoint.ts';
import { modelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { loadTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import type { DensePart } from '../src/env/family.ts';
import { encodeDense } from '../src/experiments/sft/dense-encoding.ts';
import type { ChatLayout } from '../src/rollout/chat-layout.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { resolveRolloutConfig } from '../src/rollout/config.ts';
import { saveCheckpointDir } from '../src/experiments/runs/checkpoint-store.ts';
import { createRunDir, runPaths } from '../src/experiments/runs/run-dir.ts';
import { SftConfigSchema } from '../src/experiments/sft/sft-config.ts';
import { runSft } from '../src/experiments/sft/sft.ts';
import { Rng } from '../src/util/random.ts';
import { answerLoss, type Example } from '../src/experiments/sft/sft-loss.ts';
import { parseBenchArgs } from './bench-args.ts';

const num = z.coerce.number();
const int = z.coerce.number().int();
const ArgsSchema = z
  .object({
    out: z.string().min(1),
    preset: z.string().default('reference-2l'),
    // Dense warm-up (probe-recall.ts: 16 sequences x 8 queries at lr 1e-3 learned in 500-750 steps at L2).
    'warm-steps': int.nonnegative().default(1000),
    'warm-batch': int.positive().default(16),
    'warm-lr': num.positive().default(1e-3),
    'warm-chunks': int.positive().max(4).default(2),
    /** Query rounds: each round asks every key of the pool once, in random order. */
    'warm-rounds': int.positive().max(4).default(2),
    'eval-every': int.positive().default(100),
    // Episode SFT (defaults = the 2-layer follow-up run in docs/sft.md).
    epochs: int.positive().default(20),
    episodes: int.positive().default(512),
    'batch-tokens': int.positive().default(2048),
    lr: num.positive().default(1e-3),
    seed: int.nonnegative().default(0),
  })
  .strict();
type Args = z.infer<typeof ArgsSchema>;

const KNOBS = { queries: 1, keys: 4 }; // the quick kv-ledger knobs evaluated below
const MIX = {
  'kv-ledger': [
    { share: 0.45, knobs: { chunks: 1 } },
    { share: 0.2, knobs: { chunks: 2 } },
  ],
};

/**
 * One dense sequence: a real kv-ledger stream (generator, train seeds), then every key queried.
 * Written as text parts and encoded by the dense warm-up's encoder with the run's layout, like the
 * SFT data (with the word tokenizer: one id per word, as before).
 */
function denseExample({ rng, layout, a }: { rng: Rng; layout: ChatLayout; a: Args }): Example {
  // queries = keys: the generator then lists every pool key (never-written ones answer 'none').
  const knobs = kvLedgerKnobs.parse({ ...KNOBS, queries: KNOBS.keys, chunks: a['warm-chunks'] });
  const task = generateKvLedger(rng.int(1_000_000), knobs);
  const live = new Map<string, number>();
  const pool = new Set<string>();
  const stream: string[] = [];
  task.chunks.forEach((ops, c) => {
    stream.push(`chunk ${c + 1} : ${ops.map((op) => opText(op)).join(' , ')}`);
    for (const op of ops) {
      if (op.kind === 'filler') continue;
      pool.add(op.key);
      if (op.kind === 'set') live.set(op.key, op.value);
      else live.delete(op.key);
    }
  });
  for (const q of task.queries) pool.add(q);
  stream.push('end');
  const parts: DensePart[] = [{ kind: 'context', text: stream.join(' ') }];
  for (let r = 0; r < a['warm-rounds']; r++) {
    for (const k of rng.shuffle([...pool])) {
      parts.push(
        { kind: 'context', text: `, query ${k} answer` },
        { kind: 'target', text: live.has(k) ? String(live.get(k)) : 'none' },
      );
    }
  }
  return encodeDense(parts, layout, 1 << 20);
}

async function main(): Promise<void> {
  const a = parseBenchArgs('probe-curriculum', ArgsSchema);
  if (existsSync(a.out)) throw new Error(`--out ${a.out} exists; pick a new directory (the probe always starts fresh)`);
  const sftConfig = SftConfigSchema.parse({
    env: { name: 'kv-ledger', knobs: KNOBS },
    model: { preset: a.preset },
    episodes: a.episodes,
    epochs: a.epochs,
    data: 'fresh',
    mix: MIX,
    lossyP: 0.1,
    lr: a.lr,
    batchTokens: a['batch-tokens'],
    seed: a.seed,
  });
  const source = loadTokenizer(sftConfig.tokenizer);
  const tok = source.tokenizer;
  const { config: rollout, layout } = resolveRolloutConfig({ input: sftConfig.rollout, tokenizer: source });
  // (1) The model exactly as runSft builds it, so its checkpoint loads there.
  const cfg = modelConfig(a.preset, { vocabSize: tok.vocabSize, maxSeqLen: rollout.contextWindow });
  const steps = Math.max(1, a['warm-steps']);
  const policy = new PolicyModel({
    config: cfg,
    optim: { ...DEFAULT_OPTIMIZER, lr: a['warm-lr'], totalSteps: steps, warmupSteps: Math.min(20, steps) },
    rng: new Rng(a.seed + 1),
  });
  // A fixed held-out set (same sequences at every evaluation, independent of the train stream).
  const heldRng = new Rng(999_983);
  const held = Array.from({ length: 128 }, () => denseExample({ rng: heldRng, layout, a }));
  const meanLen = held.reduce((s, e) => s + e.tokens.length, 0) / held.length;
  console.log(
    `probe-curriculum ${JSON.stringify(a)} | model L${cfg.nLayers} d${cfg.dModel} | dense seq ~${meanLen.toFixed(0)} tokens, ${held[0]!.answerAt.length} answers`,
  );
  console.log(`example: ${tok.decode(Array.from(held[0]!.tokens))}`);

  // (2) Dense warm-up.
  const train = new Rng(a.seed * 1000 + 7);
  const curve: { step: number; loss: number; acc: number; trainLoss: number }[] = [];
  const t0 = Date.now();
  let trainLoss = 0;
  let seen = 0;
  for (let step = 1; step <= a['warm-steps']; step++) {
    trainLoss += answerLoss({
      policy,
      batch: Array.from({ length: a['warm-batch'] }, () => denseExample({ rng: train, layout, a })),
      grad: true,
    }).loss;
    seen++;
    policy.step();
    if (step % a['eval-every'] === 0 || step === a['warm-steps']) {
      const ev = answerLoss({ policy, batch: held, grad: false });
      curve.push({ step, loss: ev.loss, acc: ev.acc, trainLoss: trainLoss / seen });
      console.log(
        `warm ${String(step).padStart(5)}  train ${(trainLoss / seen).toFixed(3)}  held-out loss ${ev.loss.toFixed(3)}  acc ${ev.acc.toFixed(3)}  ${((Date.now() - t0) / 1000).toFixed(0)} s`,
      );
      trainLoss = 0;
      seen = 0;
    }
  }

  // (3) Iteration 0 of the SFT run: warmed weights, fresh optimizer state (SFT's own schedule).
  const { m, v } = policy.net.optimizer.state;
  m.fill(0);
  v.fill(0);
  policy.net.optimizer.state.step = 0;
  const paths = runPaths(a.out);
  createRunDir({ dir: paths.root, system: 'base', config: sftConfig });
  await saveCheckpointDir({
    runDir: paths.root,
    iteration: 0,
    write: (dir) => saveCheckpoint(dir, { policy, meta: { sftEpoch: 0, denseWarmupSteps: a['warm-steps'] } }),
  });
  let last: Record<string, number> = {};
  const t1 = Date.now();
  const { checkpoint } = await runSft({
    runDir: paths.root,
    config: sftConfig,
    progress: {
      start: () => undefined,
      stop: () => undefined,
      update: ({ iteration, metrics }) => {
        last = { ...last, ...metrics };
        const pick = ['sft/loss', 'sft/token_acc_p50', 'heldout/acc_answer', 'heldout/acc_summary'].filter(
          (k) => k in metrics,
        );
        console.log(
          `sft epoch ${iteration}/${a.epochs}  ${pick.map((k) => `${k} ${metrics[k]!.toFixed(3)}`).join('  ')}  ${((Date.now() - t1) / 1000).toFixed(0)} s`,
        );
      },
    },
  });
  console.log(
    `eval: bin/crl eval --policy ${a.out} --env kv-ledger --knobs '${JSON.stringify(KNOBS)}' --summary-writer self --tasks 12 --samples 4 --windows 1,4 --training-windows 4`,
  );
  console.log(
    JSON.stringify({
      args: a,
      warmup: curve,
      sft: last,
      checkpoint,
      seconds: { warmup: (t1 - t0) / 1000, sft: (Date.now() - t1) / 1000 },
    }),
  );
}

main().catch((e: unknown) => {
  // User-causable errors (an unknown --preset, an existing --out) as one line, not a stack trace.
  console.error(`probe-curriculum: ${(e as Error).message}`);
  process.exit(2);
});
