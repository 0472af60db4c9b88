/**
 * The engine at real model sizes: a Hugging Face directory (`--hf DIR`) or a generated one of a
 * named shape (`--shape qwen3-0.6b`, the default: random BF16 weights and Qwen3's tokenizer,
 * written under the OS temp dir and removed at the end) is exported to an f16 GGUF file and
 * loaded into the embedded engine, each in a child process of its own so that its peak RSS is its
 * own; then the loaded model decodes at batch 1 and 8 (a 1-token prompt, `--tokens` new tokens,
 * temperature 1) with its weight matrices in each of `--precisions` (f32 and bf16 by default;
 * weight-precision.ts), each precision in a load process of its own so its peak RSS is its own.
 * The machine's read bandwidth is measured in the same run (read-bandwidth.ts: memcmp of equal
 * buffers on as many threads as the engine decodes with; one thread's figure is printed beside
 * it), and batch-1 decode is set against its limit for its precision: bandwidth / bytes
 * of the weights read per token (every parameter once, 4 bytes in f32, 2 in f16 / bf16; the tied
 * embedding as the output layer).
 * Wall and CPU seconds are both printed: on a shared machine the wall time also counts waiting;
 * decode is also given per CPU second, which with CRL_THREADS=1 is one core's speed however long
 * the process waited for it.
 * Run: `npm run bench:scale [-- --shape qwen3-0.6b | --hf DIR] [--tokens 32]` (with nice on a
 * shared machine). Last line: one JSON object with every figure.
 *
 * `--train N` measures training instead (bench/scale-train.ts): one PPO update on N tokens (in
 * sequences of `--seq`, default min(N, 512)) of the shape, with a critic of its first
 * `--critic-layers` layers (default: all; `--recompute true` recomputes activations in the
 * backward), training tokens/s beside the GEMM ceiling of the same run, and the memory plan
 * beside the peak RSS; `--layers` and `--vocab` shrink the shape (to
 * check the plan at sizes a shared machine can hold). A 0.6B update needs 15+ GB: see
 * docs/engine-scale.md "Training memory" before running it. With `--torch true` the same policy
 * step runs in the PyTorch trainer process right after (bench/scale-train-torch.ts: `python3 -m
 * crl_torch`, policy only), and the last line sets the two side by side. With `--lora-rank R`
 * the policy trains LoRA adapters of rank R on every projection instead of every weight
 * (`--lora-storage base`, the default: the frozen base in bf16 and each layer merged when read;
 * `merged`: f32 merged weights), and `--critic-embedding frozen` leaves the critic's embedding
 * table untrained (no gradient or moments for it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { exportPolicy } from '../src/experiments/export/export-policy.ts';
import { writeRandomHfModel } from '../src/model/formats/hf-generate.ts';
import type { ModelConfig } from '../src/model/network/config.ts';
import { loadPolicyDir } from '../src/model/formats/load-policy.ts';
import { MODEL_SHAPE_NAMES, MODEL_SHAPES } from '../src/model/network/model-shapes.ts';
import { ModelSampler } from '../src/model/sampler/sampler.ts';
import { WEIGHT_PRECISIONS, type WeightPrecision } from '../src/model/network/weight-precision.ts';
import { nativeAddon } from '../src/tensor/native.ts';
import { Rng } from '../src/util/random.ts';
import { parseBenchArgs } from './bench-args.ts';
import { readBandwidthGbPerS } from './read-bandwidth.ts';
import { trainPhase } from './scale-train.ts';
import { torchTrainPhase } from './scale-train-torch.ts';

const args = parseBenchArgs(
  'bench:scale',
  z
    .object({
      shape: z.enum(MODEL_SHAPE_NAMES as [string, ...string[]]).optional(),
      hf: z.string().min(1).optional(),
      tokens: z.coerce.number().int().min(1).default(32),
      batches: z.string().default('1,8'),
      precisions: z
        .string()
        .default('f32,bf16')
        .transform((s) => s.split(','))
        .pipe(z.array(z.enum(WEIGHT_PRECISIONS)).min(1)),
      phase: z.enum(['export', 'load', 'train', 'train-torch']).optional(),
      out: z.string().optional(),
      train: z.coerce.number().int().min(1).optional(),
      seq: z.coerce.number().int().min(1).optional(),
      'critic-layers': z.coerce.number().int().min(1).optional(),
      layers: z.coerce.number().int().min(1).optional(),
      vocab: z.coerce.number().int().min(2).optional(),
      recompute: z.enum(['true', 'false']).optional(),
      torch: z.enum(['true', 'false']).optional(),
      'lora-rank': z.coerce.number().int().min(1).optional(),
      'lora-storage': z.enum(['merged', 'base']).optional(),
      'critic-embedding': z.enum(['trained', 'frozen']).optional(),
    })
    .strict(),
);

/** The training phase's shape: the named one, with --layers / --vocab when given. */
function trainShape(): ModelConfig {
  const base: ModelConfig = MODEL_SHAPES[(args.shape ?? 'qwen3-0.6b') as keyof typeof MODEL_SHAPES];
  return {
    ...base,
    ...(args.layers !== undefined ? { nLayers: args.layers } : {}),
    ...(args.vocab !== undefined ? { vocabSize: args.vocab } : {}),
    maxSeqLen: Math.max(args.seq ?? 512, 512),
  };
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const peakRssGb = () => round((process.resourceUsage().maxRSS * 1024) / 1e9);
/** CPU seconds (user + system) of this process so far: on a shared machine, wall time also counts waiting. */
const cpuS = () => {
  const u = process.cpuUsage();
  return round((u.user + u.system) / 1e6, 1);
};

/** One phase in this process (the child's side): prints its figures as one JSON line. */
async function phase(name: 'export' | 'load', dir: string, precision: WeightPrecision): Promise<void> {
  const t0 = performance.now();
  if (name === 'export') {
    const r = await exportPolicy({ policy: dir, format: 'gguf', out: args.out!, precision: 'f16' });
    const s = (performance.now() - t0) / 1000;
    console.log(
      JSON.stringify({ exportS: round(s, 1), exportCpuS: cpuS(), exportPeakRssGb: peakRssGb(), ggufBytes: r.bytes }),
    );
    return;
  }
  const { policy } = await loadPolicyDir(dir);
  const loadS = (performance.now() - t0) / 1000;
  const loadPeakRssGb = peakRssGb();
  const loadCpuS = cpuS();
  const decode: Record<string, number> = {};
  // Tokens per CPU second of this process: with CRL_THREADS=1 the engine's own one-core speed,
  // whatever the waiting for a core on a shared machine (with more threads, spinning workers count).
  const perCpuS: Record<string, number> = {};
  for (const b of args.batches.split(',').map(Number)) {
    const sampler = new ModelSampler({ policy, rng: new Rng(b), precision });
    const reqs = (n: number) => Array.from({ length: b }, () => ({ prompt: [1], maxTokens: n, stopTokens: [] }));
    sampler.sampleSync(reqs(2), { temperature: 1, topP: 1 }); // warm-up: workspace, prepared weights
    const t = performance.now();
    const cpu0 = process.cpuUsage();
    const out = sampler.sampleSync(reqs(args.tokens), { temperature: 1, topP: 1 });
    const cpu = process.cpuUsage(cpu0);
    const tokens = out.reduce((a, r) => a + r.tokens.length, 0);
    decode[b] = round(tokens / ((performance.now() - t) / 1000));
    perCpuS[b] = round(tokens / ((cpu.user + cpu.system) / 1e6));
  }
  console.log(
    JSON.stringify({
      loadS: round(loadS, 1),
      loadCpuS,
      loadPeakRssGb,
      parameters: policy.net.paramCount,
      precision,
      decodeTokPerS: decode,
      decodeTokPerCpuS: perCpuS,
      decodePeakRssGb: peakRssGb(),
    }),
  );
}

function child(
  name: 'export' | 'load',
  dir: string,
  precision: WeightPrecision,
  out?: string,
): Record<string, unknown> {
  const script = fileURLToPath(import.meta.url);
  const flags = ['--hf', dir, '--phase', name, '--tokens', String(args.tokens), '--batches', args.batches];
  flags.push('--precisions', precision);
  const r = spawnSync(process.execPath, ['--import', 'tsx', script, ...flags, ...(out ? ['--out', out] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bench:scale ${name} phase exited ${r.status}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

/** --train: the training phase in a child process (its peak RSS its own); prints its JSON line. */
function trainChild(): void {
  const flags = Object.entries(args).flatMap(([k, v]) => (v === undefined ? [] : [`--${k}`, String(v)]));
  const script = fileURLToPath(import.meta.url);
  const run = (phase: 'train' | 'train-torch') => {
    // --expose-gc: the train phase collects a LoRA policy's released f32 weights before it measures.
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script, ...flags, '--phase', phase], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`bench:scale ${phase} phase exited ${r.status}`);
    return r.stdout.trim().split('\n').at(-1)!;
  };
  const info = nativeAddon?.info();
  const shape = { model: args.shape ?? 'qwen3-0.6b', layers: args.layers ?? null, vocab: args.vocab ?? null };
  console.log(JSON.stringify({ ...shape, threads: info ? info.threads : 'typescript' }));
  const embedded = run('train');
  console.log(embedded);
  if (args.torch !== 'true') return;
  // PyTorch beside it, on the same shape and tokens, right after: policy only (scale-train-torch.ts).
  const torch = JSON.parse(run('train-torch')) as { policyTrainTokPerS: number };
  console.log(
    JSON.stringify({
      ...torch,
      embeddedPolicyTrainTokPerS: (JSON.parse(embedded) as { policyTrainTokPerS: number }).policyTrainTokPerS,
      embeddedOverTorch: round(
        (JSON.parse(embedded) as { policyTrainTokPerS: number }).policyTrainTokPerS / torch.policyTrainTokPerS,
      ),
    }),
  );
}

if (args.phase === 'train') {
  const tokens = args.train ?? 512;
  const cfg = trainShape();
  trainPhase({
    cfg,
    tokens,
    seq: args.seq ?? Math.min(tokens, 512),
    criticLayers: args['critic-layers'] ?? cfg.nLayers,
    recompute: args.recompute === 'true',
    loraRank: args['lora-rank'],
    loraStorage: args['lora-storage'] ?? 'base',
    criticEmbedding: args['critic-embedding'] ?? 'trained',
  });
} else if (args.phase === 'train-torch') {
  const tokens = args.train ?? 512;
  await torchTrainPhase({ cfg: trainShape(), tokens, seq: args.seq ?? Math.min(tokens, 512) });
} else if (args.phase) {
  await phase(args.phase, args.hf!, args.precisions[0]!);
} else if (args.train !== undefined) {
  const depth = trainShape().nLayers;
  if ((args['critic-layers'] ?? depth) > depth) {
    console.error(`bench:scale: --critic-layers: at most the shape's ${depth} layers`);
    process.exit(2);
  }
  trainChild();
} else {
  const shape = args.hf ? null : (args.shape ?? 'qwen3-0.6b');
  const work = mkdtempSync(join(tmpdir(), 'crl-bench-scale-'));
  try {
    let dir = args.hf!;
    let generateS: number | null = null;
    if (shape) {
      dir = join(work, shape);
      const t = performance.now();
      writeRandomHfModel({ dir, cfg: MODEL_SHAPES[shape as keyof typeof MODEL_SHAPES], seed: 1 });
      generateS = round((performance.now() - t) / 1000, 1);
    }
    const info = nativeAddon?.info();
    console.log(JSON.stringify({ model: shape ?? dir, generateS, threads: info ? info.threads : 'typescript' }));
    const exp = child('export', dir, 'f32', join(work, 'model-f16.gguf'));
    console.log(JSON.stringify(exp));
    const loads = args.precisions.map((precision) => {
      const load = child('load', dir, precision);
      console.log(JSON.stringify(load));
      return load;
    });
    const threads = info ? info.threads : 1;
    const bandwidth = await readBandwidthGbPerS(threads);
    const bandwidth1 = threads === 1 ? bandwidth : await readBandwidthGbPerS(1);
    const bytesPerParam: Record<WeightPrecision, number> = { f32: 4, f16: 2, bf16: 2 };
    const decode = loads.map((load) => {
      const precision = load.precision as WeightPrecision;
      const weightBytes = bytesPerParam[precision] * (load.parameters as number);
      const limit = (bandwidth * 1e9) / weightBytes;
      const b1 = (load.decodeTokPerS as Record<string, number>)['1'];
      const b1Cpu = (load.decodeTokPerCpuS as Record<string, number>)['1'];
      return {
        precision,
        decodeTokPerS: load.decodeTokPerS,
        decodeTokPerCpuS: load.decodeTokPerCpuS,
        loadS: load.loadS,
        loadCpuS: load.loadCpuS,
        loadPeakRssGb: load.loadPeakRssGb,
        decodePeakRssGb: load.decodePeakRssGb,
        weightGb: round(weightBytes / 1e9),
        batch1LimitTokPerS: round(limit),
        batch1OfLimit: b1 === undefined ? null : round(b1 / limit),
        batch1PerCpuSOfLimit: b1Cpu === undefined ? null : round(b1Cpu / limit),
      };
    });
    console.log(
      JSON.stringify({
        ...exp,
        parameters: loads[0]!.parameters,
        readBandwidthGbPerS: round(bandwidth),
        readThreads: threads,
        readBandwidth1ThreadGbPerS: round(bandwidth1),
        decode,
      }),
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
