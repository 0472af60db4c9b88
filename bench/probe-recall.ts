/**
 * Associative-recall probe (docs/sft.md, "Associative recall probe"): trains a fresh PolicyModel on
 *   <bos> k1 v1 k2 v2 .. kP vP : q1 a1 q2 a2 .. qQ aQ
 * (P distinct letter keys, random number values, each query qi one of the keys, ai its value) with
 * the loss on the answers ai only, and prints held-out loss and accuracy every --eval-every steps.
 * --queries 1 is the single-query probe of the earlier log; --queries > 1 is multi-query AR
 * (Zoology's MQAR): more supervised lookups per sequence at the same token cost.
 *
 *   node --import tsx bench/probe-recall.ts --lr 1e-3 --steps 1500 --batch 16 --queries 1
 *
 * Accuracy = share of answers with argmax-equivalent p > 0.5; "chance" loss for a uniform guess
 * among the P context values is ln P. The last line is one JSON object with the whole curve.
 */
import { z } from 'zod';
import { modelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import type { DensePart } from '../src/env/family.ts';
import { encodeDense } from '../src/experiments/sft/dense-encoding.ts';
import { loadTokenizer, type LoadedTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import { VocabMap } from '../src/model/tokenizer/vocab-map.ts';
import type { ChatLayout } from '../src/rollout/chat-layout.ts';
import { resolveRolloutConfig } from '../src/rollout/config.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { Rng } from '../src/util/random.ts';
import { answerLoss, type Example } from '../src/experiments/sft/sft-loss.ts';
import { parseBenchArgs } from './bench-args.ts';
import { valueText, VALUE_WORDS } from '../src/env/value-words.ts';

const num = z.coerce.number();
const int = z.coerce.number().int();
const ArgsSchema = z
  .object({
    lr: num.positive().default(1e-3),
    steps: int.positive().default(1500),
    batch: int.positive().default(16),
    warmup: int.nonnegative().default(20),
    wd: num.nonnegative().default(DEFAULT_OPTIMIZER.weightDecay),
    clip: num.nonnegative().default(DEFAULT_OPTIMIZER.gradClip),
    beta2: num.min(0).max(1).default(DEFAULT_OPTIMIZER.betas[1]),
    'min-lr-ratio': num.min(0).max(1).default(DEFAULT_OPTIMIZER.minLrRatio),
    preset: z.string().default('reference'),
    layers: int.positive().optional(),
    /** 'scaled' = the model's init (o_proj, down_proj at 0.02 / sqrt(2L)); 'flat' = all at 0.02 (HF Llama). */
    'resid-init': z.enum(['scaled', 'flat']).default('scaled'),
    pairs: int.positive().max(26).default(4),
    /**
     * 1: letter keys (`e 14`); 2: relation-and-letter keys (`boss e 14`) drawn from 3 relations and
     * ceil(pairs / 2) letters, so that neither word alone names the pair: hop-search's two-key
     * lookup (docs/sft.md, "Family dense forms").
     */
    'key-words': int.min(1).max(2).default(1),
    /** With --key-words 2: this share of each training batch is one-key sequences (held-out stays two-key). */
    'one-key-share': num.min(0).max(1).default(0),
    queries: int.positive().default(1),
    'eval-every': int.positive().default(100),
    'eval-size': int.positive().default(256),
    seed: int.default(1),
    /** word | qwen3 | a tokenizer directory (the sequences are text, encoded like the dense warm-up's). */
    tokenizer: z.string().default('word'),
    /** numbers (`e 14`) or value words (`e apple`: one token each after a space in Qwen3; src/env/value-words.ts). */
    values: z.enum(['numbers', 'words']).default('numbers'),
  })
  .strict();
type Args = z.infer<typeof ArgsSchema>;

/**
 * Sequences are written as text parts (DensePart) and encoded by the dense warm-up's encoder with
 * the chosen tokenizer's layout (--tokenizer, default word), like every other sequence the model
 * sees; with the word tokenizer the ids are the word vocabulary's, one per word, as before.
 */
const LETTERS = Array.from({ length: 26 }, (_, i) => String.fromCharCode(97 + i));
const RELS = ['boss', 'friend', 'pet', 'home', 'rival', 'coach'];

interface PartsOptions {
  rng: Rng;
  pairs: number;
  queries: number;
  words: boolean;
}

/** Two-word keys: P distinct (relation, letter) pairs over 3 relations and ceil(P/2) letters. */
function twoKeyParts({ rng, pairs, queries, words }: PartsOptions): DensePart[] {
  const rels = rng.shuffle([...RELS]).slice(0, 3);
  const letters = rng.shuffle([...LETTERS]).slice(0, Math.ceil(pairs / 2));
  const keys = rng.shuffle(rels.flatMap((r) => letters.map((l) => [r, l] as const))).slice(0, pairs);
  const val = keys.map(() => valueText(rng.int(64), words));
  const parts: DensePart[] = [
    { kind: 'context', text: `${keys.map(([r, l], i) => `${r} ${l} ${val[i]}`).join(' ')} :` },
  ];
  for (let q = 0; q < queries; q++) {
    const i = rng.int(pairs);
    parts.push({ kind: 'context', text: `${keys[i]![0]} ${keys[i]![1]}` }, { kind: 'target', text: val[i]! });
  }
  return parts;
}

/** One sequence: P distinct keys with random values, then Q queries drawn from the keys. */
function recallParts({ rng, pairs, queries, words }: PartsOptions): DensePart[] {
  const keys = [...LETTERS];
  for (let i = keys.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  const val = new Map<string, string>();
  const pairText: string[] = [];
  for (let p = 0; p < pairs; p++) {
    const v = valueText(rng.int(64), words);
    val.set(keys[p]!, v);
    pairText.push(`${keys[p]} ${v}`);
  }
  const parts: DensePart[] = [{ kind: 'context', text: `${pairText.join(' ')} :` }];
  for (let q = 0; q < queries; q++) {
    const k = keys[rng.int(pairs)]!;
    parts.push({ kind: 'context', text: k }, { kind: 'target', text: val.get(k)! });
  }
  return parts;
}

/** The model's vocabulary: the word vocabulary whole, or the ids these sequences can hold. */
function probeVocab(source: LoadedTokenizer, layout: ChatLayout): VocabMap {
  const ref = { name: source.name, sha256: source.sha256 };
  const tok = source.tokenizer;
  if (tok.wordLevel) return VocabMap.identity(tok.vocabSize, ref);
  const words = [...LETTERS, ...RELS, ...Array.from({ length: 64 }, (_, i) => String(i)), ...VALUE_WORDS, ':'];
  return VocabMap.trimmed(
    [...layout.systemTurn, ...words.flatMap((w) => [...tok.encode(w), ...tok.encode(` ${w}`)])],
    ref,
  );
}

function batchOf(o: { rng: Rng; n: number; a: Args; layout: ChatLayout; train?: boolean }): Example[] {
  const { rng, n, a } = o;
  const oneKey = a['key-words'] === 1 ? n : o.train ? Math.round(n * a['one-key-share']) : 0;
  return Array.from({ length: n }, (_, i) =>
    encodeDense(
      (i < oneKey ? recallParts : twoKeyParts)({
        rng,
        pairs: a.pairs,
        queries: a.queries,
        words: a.values === 'words',
      }),
      o.layout,
      1 << 20,
    ),
  );
}

function main(): void {
  const a = parseBenchArgs('probe-recall', ArgsSchema);
  const source = loadTokenizer(a.tokenizer);
  const { layout } = resolveRolloutConfig({ tokenizer: source });
  const vocab = probeVocab(source, layout);
  const config = modelConfig(a.preset, { vocabSize: vocab.size, ...(a.layers ? { nLayers: a.layers } : {}) });
  const optim = {
    ...DEFAULT_OPTIMIZER,
    lr: a.lr,
    warmupSteps: a.warmup,
    totalSteps: a.steps,
    weightDecay: a.wd,
    gradClip: a.clip,
    betas: [DEFAULT_OPTIMIZER.betas[0], a.beta2] as [number, number],
    minLrRatio: a['min-lr-ratio'],
  };
  const policy = new PolicyModel({ config, optim, rng: new Rng(a.seed), vocab });
  if (a['resid-init'] === 'flat') {
    // Undo weights.ts's 1/sqrt(2L) on the residual-output projections (HF Llama does not scale them).
    for (const s of policy.net.specs) {
      if (!/(o_proj|down_proj)\.weight$/.test(s.name)) continue;
      const t = policy.net.params.subarray(s.offset, s.offset + s.size);
      for (let i = 0; i < t.length; i++) t[i] = t[i]! * Math.sqrt(2 * config.nLayers);
    }
  }
  const train = new Rng(a.seed * 1000 + 7);
  // A fixed held-out set: the same sequences at every evaluation, independent of the train stream.
  const held = batchOf({ rng: new Rng(999_983), n: a['eval-size'], a, layout });
  console.log(
    `probe-recall ${JSON.stringify(a)} | model L${config.nLayers} d${config.dModel} H${config.nHeads} | chance loss ln P = ${Math.log(a.pairs).toFixed(2)}`,
  );
  const curve: { step: number; loss: number; acc: number; trainLoss: number; gradNorm: number }[] = [];
  let trainLoss = 0;
  let seen = 0;
  const t0 = Date.now();
  for (let step = 1; step <= a.steps; step++) {
    trainLoss += answerLoss({
      policy,
      batch: batchOf({ rng: train, n: a.batch, a, layout, train: true }),
      grad: true,
    }).loss;
    seen++;
    const gradNorm = policy.step().gradNorm;
    if (step % a['eval-every'] === 0 || step === a.steps) {
      const ev = answerLoss({ policy, batch: held, grad: false });
      const row = { step, loss: ev.loss, acc: ev.acc, trainLoss: trainLoss / seen, gradNorm };
      curve.push(row);
      console.log(
        `step ${String(step).padStart(5)}  train ${row.trainLoss.toFixed(3)}  held-out loss ${ev.loss.toFixed(3)}  acc ${ev.acc.toFixed(3)}  |g| ${gradNorm.toFixed(3)}  ${((Date.now() - t0) / 1000).toFixed(0)} s`,
      );
      trainLoss = 0;
      seen = 0;
    }
  }
  const first = curve.find((r) => r.acc >= 0.9);
  console.log(JSON.stringify({ args: a, stepsTo90: first ? first.step : null, final: curve[curve.length - 1], curve }));
}

try {
  main();
} catch (e) {
  // User-causable errors (an unknown --preset, a too-long sequence) as one line, not a stack trace.
  console.error(`probe-recall: ${(e as Error).message}`);
  process.exit(2);
}
