/**
 * Training speed, embedded engine against the PyTorch trainer process, side by side in one run:
 * the same model shape, the same batch, the same steps (train forward + backward + AdamW step of
 * the policy). `npm run bench:torch-trainer [-- --preset reference --batch 16 --seq 256 --steps 5]`.
 * The PyTorch figure includes the pipe (token ids in, per-token log-probs out, their gradients
 * in); the wire column is that share, timed as forward + backward on a 1-token batch per sequence.
 * Last line: one JSON object.
 */
import { z } from 'zod';
import { TorchTrainer } from '../src/adapters/torch/torch-trainer.ts';
import { modelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import type { TrainablePolicy } from '../src/contracts/index.ts';
import { Rng } from '../src/util/random.ts';
import { parseBenchArgs } from './bench-args.ts';

const args = parseBenchArgs(
  'bench:torch-trainer',
  z.object({
    preset: z.string().default('reference'),
    batch: z.coerce.number().int().positive().default(16),
    seq: z.coerce.number().int().min(2).default(256),
    steps: z.coerce.number().int().positive().default(5),
  }),
);

const cfg = modelConfig(args.preset, { maxSeqLen: Math.max(args.seq, modelConfig(args.preset).maxSeqLen) });
const rng = new Rng(1);
const seqs = Array.from({ length: args.batch }, () =>
  Int32Array.from({ length: args.seq }, () => rng.int(cfg.vocabSize)),
);
const grads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : -1 / s.length)));

/** Median seconds of one training step (forward, backward, step) after one warm-up step. */
function timeSteps(policy: TrainablePolicy): number {
  const times: number[] = [];
  for (let i = 0; i <= args.steps; i++) {
    const t0 = performance.now();
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: grads });
    policy.step();
    if (i > 0) times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const embedded = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng: new Rng(2) });
const torch = TorchTrainer.start();
try {
  torch.init({ policy: embedded, critic: null });
  const tokens = args.batch * args.seq;
  const embeddedS = timeSteps(embedded);
  const torchS = timeSteps(torch.policy);
  // The wire alone: the same number of sequences and per-token arrays, almost no compute.
  const tiny = seqs.map((s) => s.subarray(0, 2));
  const t0 = performance.now();
  for (let i = 0; i < args.steps; i++) {
    torch.policy.forward(tiny, { train: true });
    torch.policy.backward({ logprobs: tiny.map(() => new Float32Array(2)) });
  }
  const wireRoundTripS = (performance.now() - t0) / 1000 / args.steps;
  const result = {
    preset: args.preset,
    params: embedded.net.paramCount,
    tokensPerStep: tokens,
    embeddedTokensPerSecond: tokens / embeddedS,
    torchTokensPerSecond: tokens / torchS,
    embeddedStepS: embeddedS,
    torchStepS: torchS,
    wireRoundTripS,
    torch: torch.info,
  };
  console.log(
    `${args.preset} (${(result.params / 1e6).toFixed(2)}M params), ${args.batch} x ${args.seq} tokens per step: ` +
      `embedded ${result.embeddedTokensPerSecond.toFixed(0)} tok/s, PyTorch ${result.torchTokensPerSecond.toFixed(0)} tok/s ` +
      `(torch ${torch.info.torch} on ${torch.info.device}; a near-empty forward + backward round trip ${(wireRoundTripS * 1000).toFixed(1)} ms)`,
  );
  console.log(JSON.stringify(result));
} finally {
  await torch.close();
}
