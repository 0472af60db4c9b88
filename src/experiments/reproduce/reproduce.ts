import { existsSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { deepMerge } from '../../config/config-flags.ts';
import { parseTrainConfig } from '../../config/load-config.ts';
import { learningConfig } from '../../config/train-config.ts';
import { queueSampling } from '../rollout-queue/queue-sampling.ts';
import { collectReportData } from '../../report/collect-runs.ts';
import { headlineCell } from '../../report/cells.ts';
import { PipelineFileSchema, RUN_FILES, type Invocation, type MixedNote } from '../../report/run-files.ts';
import { writeReport } from '../../report/write-report.ts';
import { codeVersion, commandLine, configHash } from '../../util/provenance.ts';
import { ensureDir, writeFileAtomic } from '../../util/atomic-write.ts';
import { evaluatePolicy, evalRequestRecord } from '../evaluate/evaluate-policy.ts';
import { evalRequests, type PolicyRef } from './reproduce-evals.ts';
import type { Preset } from './preset-types.ts';
import { createProgress, SFT_FIELDS } from '../runs/progress.ts';
import { createReuseGuard } from '../runs/reuse-guard.ts';
import { readRunConfig } from '../runs/run-dir.ts';
import { SftConfigSchema } from '../sft/sft-config.ts';
import { runSft } from '../sft/sft.ts';
import { contextWindowOf, DOUBLE_CONTEXT_SYSTEM, systemOverrides, type SystemName } from './systems.ts';
import { familyByName } from '../../env/family-by-name.ts';
import { HARBOR_PREFIX } from '../../env/harbor/task-set.ts';
import { getFamily } from '../../env/registry.ts';
import { exportTaskSet } from '../evaluate/task-set-export.ts';
import { train } from '../train/train-loop.ts';
import type { ActorKind } from '../train/trainer-models.ts';

/** The last line of `crl reproduce`; scripts parse it, so its fields are a contract. */
export interface ReproduceSummary {
  runDir: string;
  results: Record<string, Record<string, { passAt1: number; low: number; high: number }>>;
}

type Log = (line: string) => void;

/** K of the preset's training config: the "x4" of the paper. */
export function trainingWindowsOf(preset: Preset): number {
  return Number(preset.train.rollout?.maxWindows ?? 4);
}

/**
 * The whole pipeline (method §7, §8): SFT base -> RL w/o compaction (at C and at 2C) ->
 * CompactionRL -> ablations -> broadcast -> evaluation of all -> report. Every stage skips work
 * already on disk, so rerunning on the same directory resumes after any interruption (training
 * itself resumes mid-run); work made with another config is refused unless `allowMixed`
 * (runs/reuse-guard.ts), and every invocation is recorded in pipeline.json.
 */
export async function reproduce(options: {
  preset: Preset;
  presetName: string;
  outDir: string;
  actor: ActorKind;
  allowMixed?: boolean;
  /**
   * Where the RL systems' episodes run (docs/distributed.md): engine replicas (`engine.url`) and
   * rollout workers on a queue (`queue.url`); SFT and evaluation stay in this process. Not part
   * of what a run learns: reuse checks and policy hashes leave it out.
   */
  deployment?: { engineUrl?: string; queueUrl?: string; engineToken?: string };
  log: Log;
}): Promise<ReproduceSummary> {
  const { preset, log } = options;
  // Absolute from here on: paths inside stored configs (model.init) are then written relative to
  // the pipeline directory in config hashes (util/provenance.ts), whatever directory the command
  // ran from and however --out was spelled, so a resume from elsewhere is not taken for a mix.
  const root = resolve(options.outDir);
  const outDir = root;
  ensureDir(join(outDir, RUN_FILES.eval)); // not mkdirSync(recursive): it never returns under /proc
  const pipeline = openPipelineFile({ outDir, presetName: options.presetName, actor: options.actor, preset });
  const guard = createReuseGuard({ root, allowMixed: options.allowMixed ?? false, onMixed: pipeline.addMixed });
  const K = trainingWindowsOf(preset);
  const C = contextWindowOf(preset.train);
  for (const env of preset.envs) {
    for (const seed of preset.seeds) {
      const tag = `${env}--s${seed}`;
      const baseSeed = preset.baseSeed ?? seed;
      const sftDir = join(outDir, RUN_FILES.systems, `base--${env}--s${baseSeed}`);
      const sftKnobs = preset.knobs?.[env] ?? {};
      const knobs = { ...sftKnobs, ...(preset.rlKnobs?.[env] ?? {}) };
      const sftConfig = SftConfigSchema.parse(
        deepMerge(deepMerge(preset.sft, preset.sftByEnv?.[env] ?? {}), {
          env: { name: env, knobs: sftKnobs },
          seed: baseSeed,
        }),
      );
      guard.run({
        dir: sftDir,
        config: sftConfig,
        what: 'SFT base',
        env,
        seed: baseSeed,
        system: 'base',
        parse: (c) => SftConfigSchema.parse(c),
      });
      log(`sft base ${env}--s${baseSeed}`);
      const base = await runSft({
        runDir: sftDir,
        config: sftConfig,
        root,
        progress: createProgress({ label: `sft ${tag}`, fields: SFT_FIELDS }),
        log: (l) => options.log(`sft ${tag}: ${l}`),
      });
      // A preset that trains on task folders writes the family's tasks as folders once per env.
      const sets = preset.taskSets?.[env];
      const taskSet = (split: 'train' | 'eval', count: number) => {
        const dir = join(outDir, 'tasks', env, split);
        const r = exportTaskSet({ family: getFamily(env), knobs, split, count, dir });
        if (r.written) log(`wrote ${count} ${env} task folders to ${relative(outDir, dir)}`);
        return `${HARBOR_PREFIX}${dir}`;
      };
      const rlEnv = sets ? taskSet('train', sets.train) : env;
      const evalEnv = sets ? taskSet('eval', sets.eval) : env;
      const policies: Partial<Record<SystemName, PolicyRef>> = {
        base: { dir: sftDir, configHash: configHash(trainedWith(sftDir, sftConfig), root) },
      };
      for (const system of preset.systems) {
        const runDir = join(outDir, RUN_FILES.systems, `${system}--${tag}`);
        const dep = options.deployment ?? {};
        const raw = deepMerge(
          deepMerge(preset.train, {
            env: { name: rlEnv, knobs: sets ? (sets.knobs ?? {}) : knobs },
            seed,
            model: { init: base.checkpoint },
          }),
          deepMerge(systemOverrides(system, preset.train), {
            ...(dep.engineUrl ? { engine: { url: dep.engineUrl } } : {}),
            ...(dep.queueUrl ? { queue: { url: dep.queueUrl } } : {}),
          }),
        );
        const config = parseTrainConfig(raw, `${system} config`);
        guard.run({
          dir: runDir,
          config,
          what: `${system} training`,
          env,
          seed,
          system,
          parse: (c) => parseTrainConfig(c),
        });
        log(`train ${system} ${tag}`);
        const queue = config.queue
          ? await queueSampling({ config, actor: options.actor, runDir, log: (l) => log(`${system} ${tag}: ${l}`) })
          : null;
        try {
          await train({
            runDir,
            config,
            system,
            root,
            actor: options.actor,
            progress: createProgress({ label: `${system} ${tag}` }),
            ...(dep.engineToken ? { engineToken: dep.engineToken } : {}),
            ...(queue ? { wrapStages: queue.wrap } : {}),
          });
        } finally {
          await queue?.close();
        }
        policies[system] = { dir: runDir, configHash: configHash(learningConfig(trainedWith(runDir, config)), root) };
      }
      for (const req of evalRequests({
        preset,
        env: evalEnv,
        tag: env,
        knobs: sets ? (sets.knobs ?? {}) : knobs,
        variants: Object.keys(familyByName(evalEnv).variants),
        seed,
        trainingWindows: K,
        contextWindow: C,
        policies,
        actor: options.actor,
        outDir,
      })) {
        const request = evalRequestRecord(req);
        if (existsSync(req.out)) {
          guard.evalFile({ path: req.out, request, env, seed, system: req.system });
          continue;
        }
        log(
          `eval ${req.system} ${tag} ${req.variant} writer=${req.summaryWriter} C=${String(req.rollout.contextWindow)}`,
        );
        await evaluatePolicy(req);
      }
    }
  }
  log('report');
  await writeReport({
    runDirs: [outDir],
    outDir: join(outDir, RUN_FILES.report),
    title: `CompactionRL reproduction (${options.presetName})`,
    trainingWindows: K,
    contextWindow: C,
  });
  const evals = collectReportData([outDir]).evals;
  return { runDir: options.outDir, results: headline({ evals, systems: ['base', ...preset.systems], K, C }) };
}

/**
 * Pass@1 per system and mode, pooled over envs and seeds (default variant, own summaries), with the
 * report's interval (src/report/statistics.ts). x1 and xK at C, except the 2x-context system, whose
 * x1 is its own single window at 2C (method §7); its xK is its policy acting with compaction at C.
 */
function headline(o: {
  evals: Parameters<typeof headlineCell>[0]['evals'];
  systems: readonly string[];
  K: number;
  C: number;
}): ReproduceSummary['results'] {
  const results: ReproduceSummary['results'] = {};
  for (const system of o.systems) {
    const row: Record<string, { passAt1: number; low: number; high: number }> = {};
    for (const mode of ['x1', `x${o.K}`]) {
      const contextWindow = system === DOUBLE_CONTEXT_SYSTEM && mode === 'x1' ? 2 * o.C : o.C;
      const c = headlineCell({ evals: o.evals, system, mode, contextWindow });
      if (c) row[mode] = { passAt1: c.passAt1, low: c.low, high: c.high };
    }
    results[system] = row;
  }
  return results;
}

/**
 * pipeline.json: the preset as run, this invocation appended to the earlier ones (a directory
 * computed in parts names every commit that wrote to it), and the mixed reuses the guard allowed.
 */
function openPipelineFile(o: { outDir: string; presetName: string; actor: ActorKind; preset: Preset }): {
  addMixed: (note: MixedNote) => void;
} {
  const path = join(o.outDir, RUN_FILES.pipeline);
  const old = existsSync(path) ? PipelineFileSchema.safeParse(JSON.parse(readFileSync(path, 'utf8'))) : null;
  const invocation: Invocation = {
    ...codeVersion(),
    command: commandLine(),
    createdAt: new Date().toISOString(),
    presetHash: configHash(o.preset),
  };
  const invocations = [...(old?.success ? old.data.invocations : []), invocation];
  const mixed = old?.success ? [...old.data.mixed] : [];
  const write = () =>
    writeFileAtomic(
      path,
      `${JSON.stringify({ preset: o.presetName, actor: o.actor, ...o.preset, invocations, mixed }, null, 2)}\n`,
    );
  write();
  return {
    addMixed: (note) => {
      if (!mixed.some((m) => m.path === note.path)) mixed.push(note);
      write();
    },
  };
}

/**
 * The config a run directory was trained with, as its config.json stores it: an evaluation names
 * its policy by this hash, so a run reused from before a defaulted field was added (the reuse guard
 * reads it as equal) keeps the hash its evaluations were recorded with.
 */
function trainedWith(dir: string, fallback: unknown): unknown {
  try {
    return readRunConfig(dir).config;
  } catch {
    return fallback;
  }
}
