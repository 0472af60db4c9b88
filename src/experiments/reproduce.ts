import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { deepMerge } from '../config/config-flags.ts';
import { parseTrainConfig } from '../config/load-config.ts';
import type { EvalResult } from '../eval/eval-result.ts';
import { RUN_FILES } from '../report/run-files.ts';
import { cellFor } from '../report/tables.ts';
import { writeReport } from '../report/write-report.ts';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { evaluatePolicy, type EvalRequest } from './evaluate-policy.ts';
import { collectReportData } from '../report/collect-runs.ts';
import type { Preset } from './presets.ts';
import { createProgress, SFT_FIELDS } from './progress.ts';
import { runSft, SftConfigSchema } from './sft.ts';
import { systemOverrides, type SystemName } from './systems.ts';
import { taskFamily } from './task-families.ts';
import { train } from './train-loop.ts';
import type { ActorKind } from './trainer-models.ts';

/** The last line of `crl reproduce`; scripts parse it, so its fields are a contract. */
export interface ReproduceSummary {
  runDir: string;
  results: Record<string, Record<string, { passAt1: number; low: number; high: number }>>;
}

type Log = (line: string) => void;

/**
 * The whole pipeline (method §7, §8): SFT base -> RL w/o compaction -> CompactionRL -> ablations ->
 * broadcast -> evaluation of all -> report. Every stage skips work already on disk, so rerunning
 * on the same directory resumes after any interruption (training itself resumes mid-run).
 */
export async function reproduce(options: {
  preset: Preset;
  presetName: string;
  outDir: string;
  actor: ActorKind;
  log: Log;
}): Promise<ReproduceSummary> {
  const { preset, outDir, log } = options;
  mkdirSync(join(outDir, RUN_FILES.eval), { recursive: true });
  writeFileAtomic(
    join(outDir, RUN_FILES.pipeline),
    JSON.stringify({ preset: options.presetName, actor: options.actor, ...preset }, null, 2),
  );
  const trainingWindows = Number(preset.train.rollout?.maxWindows ?? 4); // K of training
  for (const env of preset.envs) {
    for (const seed of preset.seeds) {
      const tag = `${env}--s${seed}`;
      const sftDir = join(outDir, RUN_FILES.systems, `base--${tag}`);
      log(`sft base ${tag}`);
      const knobs = preset.knobs?.[env] ?? {};
      const base = await runSft({
        runDir: sftDir,
        config: SftConfigSchema.parse(
          deepMerge(deepMerge(preset.sft, preset.sftByEnv?.[env] ?? {}), { env: { name: env, knobs }, seed }),
        ),
        progress: createProgress({ label: `sft ${tag}`, fields: SFT_FIELDS }),
        log: (l) => options.log(`sft ${tag}: ${l}`),
      });
      const policies: Partial<Record<SystemName, string>> = { base: sftDir };
      for (const system of preset.systems) {
        const runDir = join(outDir, RUN_FILES.systems, `${system}--${tag}`);
        const raw = deepMerge(
          deepMerge(preset.train, { env: { name: env, knobs }, seed, model: { init: base.checkpoint } }),
          systemOverrides(system),
        );
        const config = parseTrainConfig(raw, `${system} config`);
        log(`train ${system} ${tag}`);
        await train({
          runDir,
          config,
          system,
          actor: options.actor,
          progress: createProgress({ label: `${system} ${tag}` }),
        });
        policies[system] = runDir;
      }
      for (const req of evalRequests({
        preset,
        env,
        variants: Object.keys((await taskFamily(env)).variants),
        seed,
        trainingWindows,
        policies,
        actor: options.actor,
        outDir,
      })) {
        if (existsSync(req.out)) continue;
        log(`eval ${req.system} ${tag} ${req.variant} writer=${req.summaryWriter}`);
        await evaluatePolicy(req);
      }
    }
  }
  log('report');
  await writeReport({
    runDirs: [outDir],
    outDir: join(outDir, RUN_FILES.report),
    title: `CompactionRL reproduction (${options.presetName})`,
    trainingWindows,
  });
  return {
    runDir: outDir,
    results: headline(collectReportData([outDir]).evals, ['base', ...preset.systems], trainingWindows),
  };
}

/** Default-variant evals of every system, writer swaps (Table 1), held-out variants, longer horizon. */
function evalRequests(o: {
  preset: Preset;
  env: string;
  variants: readonly string[];
  seed: number;
  trainingWindows: number;
  policies: Partial<Record<SystemName, string>>;
  actor: ActorKind;
  outDir: string;
}): EvalRequest[] {
  const { preset, env, seed } = o;
  const plan = preset.eval;
  const common = {
    env,
    knobs: preset.knobs?.[env] ?? {},
    rollout: preset.train.rollout ?? {},
    tasks: plan.tasks,
    samplesPerTask: plan.samplesPerTask,
    trainingWindows: o.trainingWindows,
    seed,
  };
  const file = (...parts: string[]) =>
    join(o.outDir, RUN_FILES.eval, `${[...parts, env, `s${seed}`].join('--').replace(/[^a-zA-Z0-9_.-]/g, '_')}.json`);
  const policy = (s: SystemName) => (o.actor === 'expert' ? 'expert' : o.policies[s]!);
  const reqs: EvalRequest[] = [];
  for (const system of Object.keys(o.policies) as SystemName[]) {
    reqs.push({
      ...common,
      system,
      policy: policy(system),
      variant: 'default',
      summaryWriter: 'self',
      windows: [...plan.windows, ...plan.longerWindows],
      out: file(system),
    });
  }
  for (const system of plan.writerSystems.filter((s) => o.policies[s])) {
    for (const w of plan.writers)
      reqs.push({
        ...common,
        system,
        policy: policy(system),
        variant: 'default',
        summaryWriter: w,
        windows: [o.trainingWindows],
        out: file(system, `writer-${w}`),
      });
  }
  return reqs.concat(heldOut({ ...o, common, file, policy }));
}

function heldOut(o: {
  preset: Preset;
  variants: readonly string[];
  trainingWindows: number;
  policies: Partial<Record<SystemName, string>>;
  common: Omit<EvalRequest, 'system' | 'policy' | 'variant' | 'summaryWriter' | 'windows' | 'out'>;
  file: (...p: string[]) => string;
  policy: (s: SystemName) => string;
}): EvalRequest[] {
  const out: EvalRequest[] = [];
  for (const variant of o.variants.slice(0, o.preset.eval.heldOutVariants)) {
    for (const system of o.preset.eval.heldOutSystems.filter((s) => o.policies[s])) {
      out.push({
        ...o.common,
        system,
        policy: o.policy(system),
        variant,
        summaryWriter: 'self',
        windows: [o.trainingWindows],
        out: o.file(system, `variant-${variant}`),
      });
    }
  }
  return out;
}

/** Pass@1 per system and mode, pooled over envs and seeds (default variant, own summaries). */
function headline(
  evals: readonly EvalResult[],
  systems: readonly string[],
  trainingWindows: number,
): ReproduceSummary['results'] {
  const results: ReproduceSummary['results'] = {};
  for (const system of systems) {
    const row: Record<string, { passAt1: number; low: number; high: number }> = {};
    for (const mode of ['x1', `x${trainingWindows}`]) {
      const c = cellFor(evals, { system, variant: 'default', writer: 'self', mode });
      if (c) row[mode] = { passAt1: c.passAt1, low: c.low, high: c.high };
    }
    results[system] = row;
  }
  return results;
}
