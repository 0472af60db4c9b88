/**
 * bench:scale's PyTorch training phase (`--train N --torch true`), in a child process of its own
 * after the embedded phase (scale-train.ts), so the two never hold the model at once and each peak
 * is its own: the same shape, random weights and token batch, the policy's forward + backward +
 * AdamW step through the PyTorch trainer process (src/adapters/torch, `python3 -m crl_torch`),
 * one warm-up update and one timed. Policy only: the PyTorch anchor the engine is held against
 * trains the policy alone (a full-depth f32 policy with AdamW state already takes 16+ GB there).
 * The trainer's peak RSS is read from /proc before it exits (VmHWM); crl's own process holds the
 * mirror of the weights the trainer was initialised from.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { TorchTrainer } from '../src/adapters/torch/torch-trainer.ts';
import type { ModelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { Rng } from '../src/util/random.ts';
import { trainFlops } from './scale-train.ts';

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** Peak resident set of a process of this machine in GB (VmHWM), or null where /proc has none. */
function peakRssGbOf(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round((Number(m[1]) * 1024) / 1e9) : null;
  } catch {
    return null;
  }
}

export async function torchTrainPhase(o: { cfg: ModelConfig; tokens: number; seq: number }): Promise<void> {
  const { cfg, tokens, seq } = o;
  const rng = new Rng(1);
  const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng });
  const lengths = Array.from({ length: Math.ceil(tokens / seq) }, (_, i) => Math.min(seq, tokens - i * seq));
  const seqs = lengths.map((l) => Int32Array.from({ length: l }, () => rng.int(cfg.vocabSize)));
  const lpGrads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : -1 / tokens)));
  const t0 = performance.now();
  const torch = TorchTrainer.start();
  try {
    torch.init({ policy, critic: null });
    const initS = (performance.now() - t0) / 1000;
    const update = () => {
      const a = performance.now();
      torch.policy.forward(seqs, { train: true });
      torch.policy.backward({ logprobs: lpGrads });
      torch.policy.step();
      return (performance.now() - a) / 1000;
    };
    update(); // warm-up: the trainer allocates its AdamW moments on the first step
    const policyS = update();
    console.log(
      JSON.stringify({
        trainer: 'torch',
        torch: torch.info.torch,
        device: torch.info.device,
        tokens,
        seq,
        initS: round(initS, 1),
        policyStepS: round(policyS, 2),
        policyTrainTokPerS: round(tokens / policyS),
        policyGflops: round(trainFlops(cfg, lengths, true) / policyS / 1e9, 1),
        trainerPeakRssGb: peakRssGbOf(torch.info.pid),
        crlPeakRssGb: round((process.resourceUsage().maxRSS * 1024) / 1e9),
      }),
    );
  } finally {
    await torch.close();
  }
}
