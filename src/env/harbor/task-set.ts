import { SHELL_TOOLS } from '../action-tools.ts';
import { z } from 'zod';
import type { EnvCallOptions, Environment, EnvReset, EnvSpec, EnvStep, TextPolicy } from '../../contracts/index.ts';
import { sandboxBackend } from '../../sandbox/registry.ts';
import type { TaskFamily } from '../family.ts';
import { KnobsError, parseKnobs } from '../knobs.ts';
import { harborEnvFromSpec } from './env-from-spec.ts';
import type { HarborEnv } from './harbor-env.ts';
import { HarborTaskError, loadHarborTasks, type HarborTask } from './load-tasks.ts';
import { harborOraclePolicy } from './oracle-policy.ts';
import { SANDBOX_CHOICES, taskSandbox } from './task-sandbox.ts';

/**
 * A folder of Harbor task folders as a task family (docs/harbor.md, "Training on task folders"):
 * what `crl train`, `crl eval` and `crl reproduce` take as `--env harbor:PATH`. Seed i is task
 * i mod T (tasks sorted by folder name), so the training loop's seed draws pick tasks uniformly
 * and evaluation walks the set in order. A task set is one split: train and eval seeds cover
 * the same tasks; hold tasks out by giving `crl eval` another folder. Each episode is described
 * as data (envSpec: the task folder and its sandbox), so rollout workers build it where it runs.
 */
export const HARBOR_PREFIX = 'harbor:';

export function isHarborEnv(env: string): boolean {
  return env.startsWith(HARBOR_PREFIX);
}

/** Rollout sizes for shell work (subword tokens): room for a command, its output and a summary. */
export const HARBOR_ROLLOUT = {
  contextWindow: 8192,
  compactThreshold: 2048,
  maxActionTokens: 384,
  maxObservationTokens: 1024,
  summaryMaxTokens: 512,
} as const;

/** `crl run`'s defaults for task folders: the sizes above and room for 100 commands. */
export const HARBOR_ROLLOUT_DEFAULTS = { ...HARBOR_ROLLOUT, stepLimit: 100 } as const;

/** What a task set's episodes run with (`--knobs` of crl train / eval, env.knobs of a config). */
export const taskSetKnobs = z
  .object({
    /** Sandbox backend per task (env/harbor/task-sandbox.ts): auto takes docker for a Dockerfile when a daemon answers. */
    sandbox: z.enum(SANDBOX_CHOICES).default('auto'),
    /** Longest one command may run, seconds (never more than the agent's remaining time). */
    commandTimeoutSec: z.number().positive().optional(),
    /** Output kept per command, bytes. */
    outputBytes: z.number().int().positive().optional(),
    /** Bind solution/ at /solution: only for the harbor-oracle acting as the expert (plumbing checks). */
    exposeSolution: z.boolean().default(false),
  })
  .strict();
export type TaskSetKnobs = z.infer<typeof taskSetKnobs>;

/** Task folders have no scripted summary writer: the policy writes its own (or null / a checkpoint). */
const noWriter =
  (name: string): TextPolicy =>
  () => {
    throw new Error(
      `the ${name} summary writer needs a scripted task family; Harbor task folders have none (use self, null or checkpoint:PATH)`,
    );
  };

/** The task set at `env` (`harbor:PATH`); a path that holds no task folder is a HarborTaskError. */
export function harborTaskSet(env: string): TaskFamily<TaskSetKnobs> {
  const path = env.slice(HARBOR_PREFIX.length);
  if (path === '') throw new HarborTaskError(`${env} needs a path: a Harbor task folder or a folder of them`);
  const tasks = loadHarborTasks(path);
  const parse = (knobs: Partial<TaskSetKnobs> | undefined) =>
    parseKnobs({ family: env, schema: taskSetKnobs, input: knobs ?? {} });
  // Which backend runs each task, and that it is installed: decided once per knob setting, so a
  // set that cannot run fails before the first episode, with the reason.
  const backends = new Map<string, readonly ('docker' | 'bwrap')[]>();
  const backendsFor = (k: TaskSetKnobs): readonly ('docker' | 'bwrap')[] => {
    const known = backends.get(k.sandbox);
    if (known) return known;
    const names = tasks.map((t) => taskSandbox(t, k.sandbox));
    for (const name of new Set(names)) {
      const unavailable = sandboxBackend(name).unavailableReason();
      if (unavailable) throw new HarborTaskError(`${env}: task folders run in a sandbox (${name}), and ${unavailable}`);
    }
    if (k.exposeSolution) {
      const missing = tasks.filter((t) => t.solutionDir === null).map((t) => t.name);
      if (missing.length)
        throw new KnobsError(env, [
          `exposeSolution: ${missing.length} task(s) have no solution/: ${missing.join(', ')}`,
        ]);
    }
    backends.set(k.sandbox, names);
    return names;
  };
  const specOf = (seed: number, knobs: Partial<TaskSetKnobs> | undefined): Extract<EnvSpec, { kind: 'harbor' }> => {
    const k = parse(knobs);
    const i = taskIndex(seed, tasks.length);
    return {
      kind: 'harbor',
      taskDir: tasks[i]!.dir,
      exposeSolution: k.exposeSolution,
      sandbox: backendsFor(k)[i]!,
      ...(k.commandTimeoutSec !== undefined ? { commandTimeoutSec: k.commandTimeoutSec } : {}),
      ...(k.outputBytes !== undefined ? { outputBytes: k.outputBytes } : {}),
    };
  };
  return {
    name: env,
    description: `${tasks.length} Harbor task folder(s) at ${path}`,
    knobs: taskSetKnobs,
    variants: {},
    trainSeeds: { start: 0, end: tasks.length },
    evalSeeds: { start: 0, end: tasks.length },
    create: (knobs) => {
      backendsFor(parse(knobs)); // fails here, before any episode, when the set cannot run
      return new TaskSetEnv(tasks, (seed) => harborEnvFromSpec(specOf(seed, knobs)));
    },
    envSpec: (seed, knobs) => specOf(seed, knobs),
    // Harbor's oracle agent (it needs exposeSolution); there is no scripted expert for a task set.
    expert: harborOraclePolicy,
    tools: SHELL_TOOLS,
    summaryWriters: { oracle: noWriter('oracle'), lossy: () => noWriter('lossy') },
    tokenizer: 'qwen3',
    rollout: HARBOR_ROLLOUT,
  };
}

function taskIndex(seed: number, count: number): number {
  return ((seed % count) + count) % count;
}

/** One episode of a task set: reset(seed) builds the environment of task seed mod T and delegates to it. */
class TaskSetEnv implements Environment {
  readonly name: string;
  private inner: HarborEnv | null = null;

  constructor(
    private readonly tasks: readonly HarborTask[],
    private readonly build: (seed: number) => HarborEnv,
  ) {
    this.name = `harbor:${tasks.length === 1 ? tasks[0]!.name : 'task-set'}`;
  }

  reset(seed: number, options?: EnvCallOptions): Promise<EnvReset> {
    if (this.inner) throw new Error(`internal: ${this.name} was reset twice`);
    this.inner = this.build(seed);
    return this.inner.reset(seed, options);
  }

  step(action: string, options?: EnvCallOptions): Promise<EnvStep> {
    if (!this.inner) throw new Error(`internal: ${this.name} stepped before reset`);
    return this.inner.step(action, options);
  }

  async close(): Promise<void> {
    await this.inner?.close();
  }
}
