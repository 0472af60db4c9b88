import { join } from 'node:path';
import { RUN_FILES } from '../../report/run-files.ts';
import type { EvalRequest } from '../evaluate/evaluate-policy.ts';
import type { Preset } from './preset-types.ts';
import { DOUBLE_CONTEXT_SYSTEM, type SystemName } from './systems.ts';
import type { ActorKind } from '../train/trainer-models.ts';

/** A trained policy of the pipeline: its run directory and the hash of the config it was made with. */
export interface PolicyRef {
  dir: string;
  configHash: string;
}

/**
 * The evaluations `crl reproduce` runs for one (env, seed), method §8: every system at x1, xK and
 * the longer horizons at C with its own summaries; writer swaps (Table 1); held-out variants. The
 * 2x-context system (method §7) is evaluated in its own configuration, one window of 2C (the x1
 * the headline and Table 2 report for it), and at C with x1 / xK like the others; the base is also
 * evaluated in one window of 2C, the starting point of that system.
 */
export function evalRequests(o: {
  preset: Preset;
  /** The env evaluated: the family, or the task set written from it (harbor:PATH). */
  env: string;
  /** The family's name, which names the result files. */
  tag: string;
  /** The knobs the env runs with (a task set's own: none). */
  knobs: Record<string, unknown>;
  variants: readonly string[];
  seed: number;
  trainingWindows: number;
  contextWindow: number;
  policies: Partial<Record<SystemName, PolicyRef>>;
  actor: ActorKind;
  outDir: string;
}): EvalRequest[] {
  const { preset, env, tag, seed, trainingWindows: K, contextWindow: C } = o;
  const plan = preset.eval;
  const rolloutAt = (c: number) => ({ ...(preset.train.rollout ?? {}), contextWindow: c });
  const common = {
    env,
    knobs: o.knobs,
    rollout: rolloutAt(C),
    tasks: plan.tasks,
    samplesPerTask: plan.samplesPerTask,
    trainingWindows: K,
    seed,
    root: o.outDir,
    ...(preset.tokenizer ? { tokenizer: preset.tokenizer } : {}),
  };
  const file = (...parts: string[]) =>
    join(o.outDir, RUN_FILES.eval, `${[...parts, tag, `s${seed}`].join('--').replace(/[^a-zA-Z0-9_.-]/g, '_')}.json`);
  const policy = (s: SystemName) => ({
    policy: o.actor === 'expert' ? 'expert' : o.policies[s]!.dir,
    policyConfigHash: o.actor === 'expert' ? null : o.policies[s]!.configHash,
  });
  const has = (s: SystemName) => o.policies[s] !== undefined;
  const reqs: EvalRequest[] = [];
  const allModes = [...plan.windows, ...plan.longerWindows];
  for (const system of Object.keys(o.policies) as SystemName[]) {
    const self = { ...common, system, ...policy(system), variant: 'default', summaryWriter: 'self' };
    if (system === DOUBLE_CONTEXT_SYSTEM) {
      reqs.push({ ...self, rollout: rolloutAt(2 * C), windows: [1], out: file(system) });
      reqs.push({ ...self, windows: allModes, out: file(system, `at-C${C}`) });
    } else reqs.push({ ...self, windows: allModes, out: file(system) });
  }
  if (has(DOUBLE_CONTEXT_SYSTEM) && has('base'))
    reqs.push({
      ...common,
      system: 'base',
      ...policy('base'),
      variant: 'default',
      summaryWriter: 'self',
      rollout: rolloutAt(2 * C),
      windows: [1],
      out: file('base', `at-C${2 * C}`),
    });
  for (const system of plan.writerSystems.filter(has)) {
    for (const w of plan.writers)
      reqs.push({
        ...common,
        system,
        ...policy(system),
        variant: 'default',
        summaryWriter: w,
        windows: [K],
        out: file(system, `writer-${w}`),
      });
  }
  for (const variant of o.variants.slice(0, plan.heldOutVariants)) {
    for (const system of plan.heldOutSystems.filter(has)) {
      reqs.push({
        ...common,
        system,
        ...policy(system),
        variant,
        summaryWriter: 'self',
        windows: [K],
        out: file(system, `variant-${variant}`),
      });
    }
  }
  return reqs;
}
