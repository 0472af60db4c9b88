/**
 * Where one training iteration's time goes, per stage and per op: `npm run bench:iteration --
 * --init <checkpoint dir> [--system compaction-rl] [--preset quick] [--env kv-ledger] [--iterations 3]
 * [--no-merge]` (--no-merge: ppo.mergePrefixes false, every segment run on its own).
 *
 * Runs the training loop itself (src/experiments/train/train-loop.ts's train(), in a temporary run
 * directory) on a preset's training config, from the first iteration past the critic warm-up so
 * every iteration has both updates, with every stage wrapped (train's wrapStages) to charge wall
 * and CPU time to:
 *   sampling (publish and sample) | segments and batch | old-log-prob recompute (policy, critic) |
 *   advantages | PPO update (policy forward, policy backward, policy optimizer, critic forward,
 *   critic backward, critic optimizer) | records and I/O (metrics, sample trajectories with
 *   per-token credit) | checkpoint (the bench's own stage: one save every iteration, charged
 *   1/checkpointEvery, the share the loop's cadence gives each iteration)
 * and, inside each stage, to the model's ops (LlamaNetwork.profiler). `--init` should be an SFT
 * base (crl sft or crl reproduce write one): a fresh model samples until every token budget runs
 * out, which is not what training sees. Timings on a shared machine are noisy; compare CPU seconds
 * and shares, and repeat.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { deepMerge } from '../src/config/config-flags.ts';
import { parseTrainConfig } from '../src/config/load-config.ts';
import { getPreset } from '../src/experiments/reproduce/presets.ts';
import { systemOverrides } from '../src/experiments/reproduce/systems.ts';
import { train } from '../src/experiments/train/train-loop.ts';
import {
  aroundStages,
  type StageName,
  type TrainingRun,
  type TrainingStages,
} from '../src/experiments/train/training-stages.ts';
import { Profiler } from '../src/model/network/profiler.ts';
import { carrierLengths, prefixGroups } from '../src/rl/shared-prefix.ts';

export interface StageTotals {
  wallMs: number;
  cpuMs: number;
  faults: number; // minor page faults (fresh memory touched)
  ops: Map<string, number>; // profiler ms per op inside the stage
}

export interface IterationProfile {
  stages: Map<string, StageTotals>;
  iterations: number;
  tokens: { generated: number; segments: number; segmentTokens: number; sequenceTokens: number };
}

/** Stage clock: wall and process CPU time, and the op profile recorded while the stage ran. */
class StageClock {
  readonly stages = new Map<string, StageTotals>();
  constructor(
    private readonly prof: Profiler,
    private readonly onStageEnd?: (name: string) => void,
  ) {}

  /** Runs fn and charges its time to name, scaled by weight (a cost paid every 1/weight iterations). */
  async time<T>(name: string, fn: () => T | Promise<T>, weight = 1): Promise<T> {
    this.prof.reset();
    const cpu0 = process.cpuUsage();
    const f0 = process.resourceUsage().minorPageFault;
    const t0 = performance.now();
    const out = await fn();
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const faults = process.resourceUsage().minorPageFault - f0;
    this.onStageEnd?.(name);
    const s = this.stages.get(name) ?? { wallMs: 0, cpuMs: 0, faults: 0, ops: new Map<string, number>() };
    s.faults += weight * faults;
    s.wallMs += weight * wallMs;
    s.cpuMs += (weight * (cpu.user + cpu.system)) / 1000;
    for (const [k, v] of this.prof.totals) s.ops.set(k, (s.ops.get(k) ?? 0) + weight * v);
    this.stages.set(name, s);
    return out;
  }
}

/** Wraps obj[method] so each call is charged to `name` (nested inside the enclosing stage's clock). */
function charge<T extends object, K extends keyof T>(
  obj: T,
  method: K,
  name: string,
  sub: Map<string, { wallMs: number; cpuMs: number }>,
): void {
  const orig = obj[method] as (...args: unknown[]) => unknown;
  (obj as Record<K, unknown>)[method] = (...args: unknown[]) => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const out = orig.apply(obj, args);
    const cpu = process.cpuUsage(cpu0);
    const e = sub.get(name) ?? { wallMs: 0, cpuMs: 0 };
    e.wallMs += performance.now() - t0;
    e.cpuMs += (cpu.user + cpu.system) / 1000;
    sub.set(name, e);
    return out;
  };
}

/**
 * The bench's row for each stage of the loop. Publishing the weights is part of sampling, as in
 * the loop's perf/tokens_per_s; in process it costs nothing (the run's first and last publish,
 * outside any iteration, are charged there too).
 */
const ROW: Record<StageName, string> = {
  publish: 'sampling',
  sample: 'sampling',
  segments: 'segments and batch',
  recompute: 'recompute',
  advantages: 'advantages',
  batch: 'segments and batch',
  update: 'ppo update',
  metrics: 'records and I/O',
  write: 'records and I/O',
  checkpoint: 'checkpoint',
};

/** Where a stage's model calls are itemized (indented rows under the stage's own). */
const ITEMIZED: Partial<Record<StageName, string>> = { recompute: 'recompute', update: 'ppo' };

export async function profileIterations(options: {
  init: string;
  preset: string;
  env: string;
  system: string;
  iterations: number;
  /** ppo.mergePrefixes: run exec_j and sum_j as one sequence (the default) or apart. */
  merge: boolean;
  onStageEnd?: (name: string) => void;
}): Promise<IterationProfile> {
  const preset = getPreset(options.preset);
  const env = options.env;
  const seed = preset.seeds[0] ?? 0;
  const config = parseTrainConfig(
    deepMerge(
      deepMerge(preset.train, {
        env: { name: env, knobs: preset.knobs?.[env] ?? {} },
        seed,
        model: { init: options.init },
      }),
      deepMerge(systemOverrides(options.system), { ppo: { mergePrefixes: options.merge } }),
    ),
  );
  const prof = new Profiler();
  const clock = new StageClock(prof, options.onStageEnd);
  const sub = new Map<string, { wallMs: number; cpuMs: number }>();
  const tokens = { generated: 0, segments: 0, segmentTokens: 0, sequenceTokens: 0 };
  const dir = mkdtempSync(join(tmpdir(), 'crl-bench-iteration-'));
  /** The loop's own stages, each timed; the checkpoint is the bench's (below). */
  const timed = (stages: TrainingStages, run: TrainingRun): TrainingStages => {
    const { models } = run;
    models.policy.net.profiler = prof;
    if (models.critic) models.critic.net.profiler = prof;
    charge(models.policy, 'forward', 'policy forward', sub);
    charge(models.policy, 'backward', 'policy backward', sub);
    charge(models.policy, 'step', 'policy optimizer', sub);
    if (models.critic) {
      charge(models.critic, 'forward', 'critic forward', sub);
      charge(models.critic, 'backward', 'critic backward', sub);
      charge(models.critic, 'step', 'critic optimizer', sub);
    }
    const counted: TrainingStages = {
      ...stages,
      segments: async (input) => {
        const segments = await stages.segments(input);
        tokens.segments += segments.length;
        tokens.segmentTokens += segments.reduce((a, s) => a + s.tokens.length, 0);
        const segTokens = segments.map((s) => s.tokens);
        const groups = prefixGroups({ tokens: segTokens, merge: options.merge });
        tokens.sequenceTokens += carrierLengths({ groups, tokens: segTokens }).reduce((a, b) => a + b, 0);
        return segments;
      },
      metrics: async (input) => {
        const metrics = await stages.metrics(input);
        tokens.generated += metrics['rollout/generated_tokens']!;
        return metrics;
      },
      // train-loop.ts saves every checkpointEvery iterations: the bench saves every iteration and
      // charges each its share (below), so a short bench still sees the steady-state cost.
      checkpoint: ({ iteration }) => models.save(join(dir, `ckpt-${iteration}`), { iteration }),
    };
    return aroundStages(counted, async (name, call) => {
      const weight = name === 'checkpoint' ? 1 / config.checkpointEvery : 1;
      const item = ITEMIZED[name];
      if (item === undefined) return clock.time(ROW[name], call, weight);
      sub.clear();
      const out = await clock.time(ROW[name], call, weight);
      for (const [k, v] of sub) clock.stages.set(`  ${item}: ${k}`, addTo(clock.stages.get(`  ${item}: ${k}`), v));
      return out;
    });
  };
  try {
    // Past the critic warm-up: a steady-state iteration updates both networks.
    const first = config.ppo.criticWarmupIterations + 1;
    await train({
      runDir: join(dir, 'run'),
      config,
      actor: 'policy',
      system: options.system,
      wrapStages: timed,
      firstIteration: first,
      lastIteration: first + options.iterations - 1,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { stages: clock.stages, iterations: options.iterations, tokens };
}

function addTo(e: StageTotals | undefined, v: { wallMs: number; cpuMs: number }): StageTotals {
  const out = e ?? { wallMs: 0, cpuMs: 0, faults: 0, ops: new Map<string, number>() };
  out.wallMs += v.wallMs;
  out.cpuMs += v.cpuMs;
  return out;
}

function fmt(x: number, d = 0): string {
  return x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
}

export function printProfile(p: IterationProfile): void {
  const top = [...p.stages.entries()].filter(([k]) => !k.startsWith('  '));
  const wall = top.reduce((a, [, s]) => a + s.wallMs, 0);
  const cpu = top.reduce((a, [, s]) => a + s.cpuMs, 0);
  const n = p.iterations;
  console.log(
    `per iteration (mean of ${n}): ${fmt(p.tokens.generated / n)} generated tokens, ${fmt(p.tokens.segments / n)} segments, ${fmt(p.tokens.segmentTokens / n)} segment tokens, ${fmt(p.tokens.sequenceTokens / n)} tokens per forward pass over the batch`,
  );
  const faults = top.reduce((a, [, s]) => a + s.faults, 0);
  console.log('\n| stage | wall ms | share | CPU ms | share | page faults |\n|---|---|---|---|---|---|');
  for (const [k, s] of p.stages) {
    const f = k.startsWith('  ') ? '' : fmt(s.faults / n);
    console.log(
      `| ${k.startsWith('  ') ? `&nbsp;&nbsp;${k.trim()}` : k} | ${fmt(s.wallMs / n)} | ${fmt((100 * s.wallMs) / wall, 1)}% | ${fmt(s.cpuMs / n)} | ${fmt((100 * s.cpuMs) / cpu, 1)}% | ${f} |`,
    );
  }
  console.log(`| total | ${fmt(wall / n)} | | ${fmt(cpu / n)} | | ${fmt(faults / n)} |`);
  for (const [k, s] of top) {
    if (s.ops.size === 0) continue;
    const total = [...s.ops.values()].reduce((a, b) => a + b, 0);
    console.log(`\n${k}: per op (ms per iteration, share of profiled time)`);
    for (const [op, ms] of [...s.ops.entries()].sort((a, b) => b[1] - a[1]))
      console.log(`  ${op.padEnd(20)} ${fmt(ms / n, 1).padStart(9)}  ${fmt((100 * ms) / total, 1).padStart(5)}%`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      init: { type: 'string' },
      preset: { type: 'string', default: 'quick' },
      env: { type: 'string', default: 'kv-ledger' },
      system: { type: 'string', default: 'compaction-rl' },
      iterations: { type: 'string', default: '3' },
      'no-merge': { type: 'boolean', default: false },
    },
  });
  if (!values.init) {
    console.error('bench:iteration needs --init <checkpoint dir> (an SFT base, e.g. from crl sft or crl reproduce)');
    process.exit(2);
  }
  const p = await profileIterations({
    init: values.init,
    preset: values.preset,
    env: values.env,
    system: values.system,
    iterations: Number(values.iterations),
    merge: !values['no-merge'],
  });
  printProfile(p);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
